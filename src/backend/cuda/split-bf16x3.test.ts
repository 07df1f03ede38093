import { describe, expect, it } from 'vitest';
import { bf16ToF32 } from '../../tensor/dtype.js';
import { splitBf16x3 } from './split-bf16x3.js';

/** (W1 + W2) + W3 in f32, the order the CUDA matmul sums its three products in. */
function join(parts: Uint16Array): Float32Array {
  const n = parts.length / 3;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const ab = Math.fround(bf16ToF32(parts[i]!) + bf16ToF32(parts[n + i]!));
    out[i] = ab + bf16ToF32(parts[2 * n + i]!);
  }
  return out;
}

const fromBits = (bits: number[]): Float32Array => new Float32Array(Uint32Array.from(bits).buffer);

describe('splitBf16x3', () => {
  it('reconstructs random f32 weights of every sign and scale exactly', () => {
    const w = new Float32Array(50_000);
    let s = 12345;
    for (let i = 0; i < w.length; i++) {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      // ±[1, 2) · 2^e for e in -100 .. 100: random significands, signs and scales
      const sign = s >>> 31 ? -1 : 1;
      w[i] = sign * (1 + s / 2 ** 32) * 2 ** (((i * 37) % 201) - 100);
    }
    expect(join(splitBf16x3(w))).toEqual(w);
  });

  it('keeps the parts small: |W2| <= 2^-8 |w|, |W3| <= 2^-16 |w| (nearest-even rounding)', () => {
    const w = Float32Array.from({ length: 4096 }, (_, i) => Math.fround(Math.sin(i) * 0.03));
    const p = splitBf16x3(w);
    for (let i = 0; i < w.length; i++) {
      const a = Math.abs(w[i]!);
      expect(Math.abs(bf16ToF32(p[w.length + i]!))).toBeLessThanOrEqual(a * 2 ** -8);
      expect(Math.abs(bf16ToF32(p[2 * w.length + i]!))).toBeLessThanOrEqual(a * 2 ** -16);
    }
  });

  it('splits bf16 values into (w, 0, 0) and zeros into zeros', () => {
    const w = Float32Array.from([0, -0, 1, -2.5, 0.0078125, 3.3895313892515355e38]);
    const p = splitBf16x3(w);
    expect(Array.from(p.subarray(0, 6), bf16ToF32)).toEqual(Array.from(w));
    expect(Array.from(p.subarray(6))).toEqual(new Array(12).fill(0));
  });

  it('is exact down to 2^-110 and within 2^-134 for subnormals', () => {
    const w = fromBits([
      0x08ffffff, // 2^-110 · (2 − 2^-23): the smallest binade still exact
      0x88abcdef,
      0x00000001, // smallest f32 subnormal, 2^-149
      0x80012345,
      0x007fffff, // largest f32 subnormal
      0x00800001, // smallest normal + 1 ulp
      0x04c0ffee,
    ]);
    const back = join(splitBf16x3(w));
    expect(back[0]).toBe(w[0]);
    expect(back[1]).toBe(w[1]);
    for (let i = 2; i < w.length; i++)
      expect(Math.abs(back[i]! - w[i]!), `value ${i}`).toBeLessThanOrEqual(2 ** -134);
  });

  it('never makes an Inf part from a finite weight near f32 max', () => {
    const w = fromBits([0x7f7fffff, 0xff7fffff, 0x7f7f8000, 0x7f7f7fff]);
    const p = splitBf16x3(w);
    for (const b of p) expect(b & 0x7f80, `part 0x${b.toString(16)}`).not.toBe(0x7f80);
    expect(join(p)).toEqual(w);
  });

  it('passes non-finite values through the first part (the loader rejects them by name)', () => {
    const w = Float32Array.from([Infinity, -Infinity, NaN]);
    const p = splitBf16x3(w);
    expect(bf16ToF32(p[0]!)).toBe(Infinity);
    expect(bf16ToF32(p[1]!)).toBe(-Infinity);
    expect(bf16ToF32(p[2]!)).toBeNaN();
    expect(Array.from(p.subarray(3))).toEqual(new Array(6).fill(0));
  });
});
