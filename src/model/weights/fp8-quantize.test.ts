import { describe, expect, it } from 'vitest';
import { F8E4M3_TABLE } from '../../tensor/dtype.js';
import { BLOCK_FP8, fp8ScaleShape, isFp8Weight, MXFP8 } from '../../tensor/fp8-weight.js';
import type { Tensor } from '../../tensor/tensor.js';
import { E8M0_TABLE } from './fp8-dequant.js';
import { f32ToE4m3, quantizeDequantize, quantizeRows } from './fp8-quantize.js';

describe('f32ToE4m3', () => {
  it('is exact on every finite code and rounds ties to even', () => {
    for (let b = 0; b < 256; b++) {
      if ((b & 0x7f) === 0x7f) continue;
      const v = F8E4M3_TABLE[b]!;
      expect(F8E4M3_TABLE[f32ToE4m3(v)]).toBe(v);
    }
    // 1.0625 lies halfway between 1 (mantissa 0, even) and 1.125 (mantissa 1): to 1.
    expect(F8E4M3_TABLE[f32ToE4m3(1.0625)]).toBe(1);
    // 1.1875 lies halfway between 1.125 (odd) and 1.25 (even): to 1.25.
    expect(F8E4M3_TABLE[f32ToE4m3(1.1875)]).toBe(1.25);
    expect(F8E4M3_TABLE[f32ToE4m3(1.07)]).toBe(1.125);
    // Subnormals are multiples of 2^-9; half of the smallest ties to +0.
    expect(F8E4M3_TABLE[f32ToE4m3(2 ** -10)]).toBe(0);
    expect(F8E4M3_TABLE[f32ToE4m3(3 * 2 ** -10)]).toBe(2 ** -8);
  });

  it('saturates at ±448 (no infinities) and maps NaN to the NaN code', () => {
    expect(f32ToE4m3(448)).toBe(0x7e);
    expect(f32ToE4m3(1e9)).toBe(0x7e);
    expect(f32ToE4m3(Infinity)).toBe(0x7e);
    expect(f32ToE4m3(-1e9)).toBe(0xfe);
    expect(f32ToE4m3(NaN)).toBe(0x7f);
    expect(f32ToE4m3(-0)).toBe(0x80);
  });
});

describe('quantizeRows', () => {
  it('block FP8: one f32 scale amax/448 per 128 x 128 block, 1 for an all-zero block', () => {
    const rows = 130;
    const cols = 200;
    const w = new Float32Array(rows * cols);
    for (let i = 0; i < w.length; i++) w[i] = Math.sin(i) * (i % cols < 128 ? 2 : 0.01);
    w.fill(0, 128 * cols); // rows 128..129: the second row block is all zero
    const q = quantizeRows(w, rows, cols, 'fp8', [128, 128]);
    expect(q.scales).toBeInstanceOf(Float32Array);
    expect(q.scales.length).toBe(4);
    let amax0 = 0;
    for (let r = 0; r < 128; r++)
      for (let c = 0; c < 128; c++) amax0 = Math.max(amax0, Math.abs(w[r * cols + c]!));
    expect(q.scales[0]).toBe(Math.fround(amax0 / 448));
    expect(q.scales[2]).toBe(1);
    expect(q.scales[3]).toBe(1);
    // The block's largest value maps to ±448 exactly.
    const codes = Array.from(q.codes.subarray(0, 128), (c) => Math.abs(F8E4M3_TABLE[c]!));
    expect(Math.max(...codes)).toBeLessThanOrEqual(448);
  });

  it('MXFP8: the smallest power of two 2^(s-127) >= amax/448 per row and 32 inputs', () => {
    const w = Float32Array.from(
      { length: 64 },
      (_, i) => (i < 32 ? 448 * 4 : 0) * (i % 2 ? -1 : 1),
    );
    w[40] = 3;
    const q = quantizeRows(w, 1, 64, 'mxfp8', [1, 32]);
    expect(Array.from(q.scales)).toEqual([129, Math.ceil(Math.log2(3 / 448)) + 127]);
    expect(E8M0_TABLE[q.scales[0]!]! * F8E4M3_TABLE[q.codes[0]!]!).toBe(448 * 4);
    const zero = quantizeRows(new Float32Array(32), 1, 32, 'mxfp8', [1, 32]);
    expect(zero.scales[0]).toBe(127);
  });
});

describe('quantizeDequantize (--quantization fp8 on the CPU)', () => {
  it('equals code · scale of quantizeRows per matrix, within one E4M3 step of the input', () => {
    const [E, R, C] = [2, 130, 256];
    const w = Float32Array.from(
      { length: E * R * C },
      (_, i) => Math.cos(i * 0.37) * (1 + (i % 7)),
    );
    const d = quantizeDequantize(w, R, C);
    for (let e = 0; e < E; e++) {
      const q = quantizeRows(w.subarray(e * R * C, (e + 1) * R * C), R, C, 'fp8', [128, 128]);
      for (const i of [0, 5, 128 * C + 3, R * C - 1]) {
        const s = q.scales[Math.floor(Math.floor(i / C) / 128) * 2 + Math.floor((i % C) / 128)]!;
        expect(d[e * R * C + i]).toBe(Math.fround(F8E4M3_TABLE[q.codes[i]!]! * s));
      }
    }
    for (let i = 0; i < w.length; i++)
      expect(Math.abs(d[i]! - w[i]!)).toBeLessThanOrEqual(Math.abs(w[i]!) / 16 + 7 * 2 ** -9);
    // Representable values survive: a block holding only codes' values at scale 1.
    const exact = Float32Array.from(
      { length: 128 },
      (_, i) => F8E4M3_TABLE[i % 126]! * (448 / 448),
    );
    exact[0] = 448;
    expect(quantizeDequantize(exact, 1, 128)).toEqual(exact);
  });
});

describe('Fp8Weight', () => {
  it('scale shapes: one per row and group, stacked weights keep their leading dims', () => {
    expect(fp8ScaleShape([256, 300], BLOCK_FP8)).toEqual([256, 3]);
    expect(fp8ScaleShape([3, 64, 96], MXFP8)).toEqual([3, 64, 3]);
  });

  it('isFp8Weight tells an FP8 weight (codes + scales + scaling) from a plain tensor', () => {
    const plain = { shape: [2, 2], dtype: 'bf16', device: 'cpu' } as unknown as Tensor;
    const scales = { shape: [2, 1], dtype: 'f32', device: 'cpu' } as unknown as Tensor;
    expect(isFp8Weight(plain)).toBe(false);
    expect(isFp8Weight({ ...plain, dtype: 'f8e4m3' } as Tensor)).toBe(false);
    expect(isFp8Weight({ ...plain, dtype: 'f8e4m3', scales, scaling: BLOCK_FP8 } as Tensor)).toBe(
      true,
    );
  });
});
