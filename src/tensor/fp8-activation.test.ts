import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
import { f32ToE4m3, F8E4M3_TABLE } from './dtype.js';
import {
  w8a8Applies,
  w8a8Dequantize,
  w8a8MoeApplies,
  w8a8Quantize,
  W8A8_MIN_ROWS,
} from './fp8-activation.js';
import { BLOCK_FP8, MXFP8 } from './fp8-weight.js';

function values(n: number, seed: number, groupScaled = false, K = 256): Float32Array {
  const a = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    const g = Math.floor((i % K) / 128) + Math.floor(i / K);
    a[i] = Math.fround((2 * (s / 2 ** 31) - 1) * (groupScaled ? 2 ** ((g * 5) % 11) - 5 : 1));
  }
  return a;
}

function relErr(a: Float32Array, b: Float32Array): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < a.length; i++) {
    num += (a[i]! - b[i]!) ** 2;
    den += b[i]! ** 2;
  }
  return Math.sqrt(num / den);
}

describe('W8A8 activation quantization (per row and 128 inputs)', () => {
  it('scale amax/448 in f32, codes E4M3(f32(x / s)), an all-zero group with scale 1', () => {
    const K = 384;
    const x = values(2 * K, 7, true, K);
    x.fill(0, K + 128, K + 256); // row 1, group 1
    const { codes, scales } = w8a8Quantize(x, K);
    expect(scales.length).toBe(6);
    for (let g = 0; g < 6; g++) {
      let amax = 0;
      for (let i = 0; i < 128; i++) amax = Math.max(amax, Math.abs(x[g * 128 + i]!));
      expect(scales[g]).toBe(amax > 0 ? Math.fround(amax / 448) : 1);
      for (let i = 0; i < 128; i++)
        expect(codes[g * 128 + i]).toBe(f32ToE4m3(Math.fround(x[g * 128 + i]! / scales[g]!)));
    }
    expect(scales[4]).toBe(1);
    // The group's largest magnitude lands on ±448 (0x7e / 0xfe).
    const big = x
      .subarray(0, 128)
      .reduce((m, v, i, a) => (Math.abs(v) > Math.abs(a[m]!) ? i : m), 0);
    expect(codes[big]! & 0x7f).toBe(0x7e);
    const deq = w8a8Dequantize(x.slice(), K);
    for (let i = 0; i < x.length; i++)
      expect(deq[i]).toBe(Math.fround(F8E4M3_TABLE[codes[i]!]! * scales[Math.floor(i / 128)]!));
    // E4M3 keeps 4 significant bits: each value within 2^-4 of itself (relative), bar the tiny.
    expect(relErr(deq, x)).toBeLessThan(0.04);
    expect(() => w8a8Quantize(new Float32Array(200), 100)).toThrow(/multiple of 128/);
  });

  it('applies to block FP8 with 128-input groups from 257 rows; MoE needs both weights', () => {
    expect(W8A8_MIN_ROWS).toBe(257);
    expect(w8a8Applies(BLOCK_FP8, 257, 512, 256)).toBe(true);
    expect(w8a8Applies(BLOCK_FP8, 256, 512, 256)).toBe(false);
    expect(w8a8Applies(MXFP8, 4096, 512, 256)).toBe(false);
    expect(w8a8Applies({ kind: 'block', group: 256 }, 4096, 512, 256)).toBe(false);
    expect(w8a8Applies(BLOCK_FP8, 4096, 512, 200)).toBe(false);
    expect(w8a8Applies(BLOCK_FP8, 4096, 500, 256)).toBe(false);
    expect(w8a8Applies(undefined, 4096, 512, 256)).toBe(false);
    expect(w8a8MoeApplies(BLOCK_FP8, BLOCK_FP8, 300, 256, 128)).toBe(true);
    expect(w8a8MoeApplies(BLOCK_FP8, undefined, 300, 256, 128)).toBe(false);
    expect(w8a8MoeApplies(BLOCK_FP8, BLOCK_FP8, 256, 256, 128)).toBe(false);
  });
});

describe('CPU backend: the W8A8 rule on weights marked as dequantized FP8', () => {
  const [N, K] = [32, 256];

  it('matmul quantizes x from 257 rows, not below, and only for marked block-FP8 weights', () => {
    const cpu = new CpuBackend();
    const wv = values(N * K, 3);
    for (const M of [W8A8_MIN_ROWS - 1, W8A8_MIN_ROWS, 300]) {
      const x = values(M * K, 11 + M, true, K);
      const run = (mark: 'block' | 'mx' | null, xv: Float32Array): Float32Array => {
        const w = cpu.upload(wv, [N, K], 'bf16');
        if (mark) cpu.markDequantizedFp8(w, mark === 'block' ? BLOCK_FP8 : MXFP8);
        const out = cpu.alloc([M, N], 'f32');
        cpu.matmul(out, cpu.upload(xv, [M, K], 'bf16'), w);
        return cpu.readF32(out);
      };
      const plain = run(null, x);
      const w8a8 = run(null, w8a8Dequantize(x.slice(), K));
      const marked = run('block', x);
      expect(run('mx', x)).toEqual(plain);
      if (M < W8A8_MIN_ROWS) expect(marked).toEqual(plain);
      else {
        expect(marked).toEqual(w8a8);
        expect(relErr(marked, plain)).toBeGreaterThan(1e-3);
      }
    }
  });

  it('matmulMany gives exactly matmul one by one, marked (W8A8) and plain weights mixed', () => {
    const cpu = new CpuBackend();
    const M = W8A8_MIN_ROWS + 3;
    const x = cpu.upload(values(M * K, 21, true, K), [M, K], 'bf16');
    const ws = [0, 1, 2].map((i) => cpu.upload(values(N * K, 30 + i), [N, K], 'bf16'));
    cpu.markDequantizedFp8(ws[0]!, BLOCK_FP8);
    cpu.markDequantizedFp8(ws[2]!, BLOCK_FP8);
    const many = ws.map(() => cpu.alloc([M, N], 'f32'));
    cpu.matmulMany(many, x, ws);
    ws.forEach((w, i) => {
      const one = cpu.alloc([M, N], 'f32');
      cpu.matmul(one, x, w);
      expect(cpu.readF32(many[i]!)).toEqual(cpu.readF32(one));
    });
  });

  it('moe quantizes the gathered rows and the SwiGLU output from 257 tokens', () => {
    const [T, D, I, E] = [W8A8_MIN_ROWS, 256, 128, 3];
    const cpu = new CpuBackend();
    const gu = values(E * 2 * I * D, 5).map((v) => v / 16);
    const dn = values(E * D * I, 6).map((v) => v / 11);
    const x = values(T * D, 9, true, D);
    const ids = Int32Array.from({ length: T }, (_, t) => (t * 7) % E);
    const rw = Float32Array.from({ length: T }, (_, t) => 0.5 + (t % 5) / 10);
    const o = { alpha: 1.702, limit: 7 };
    const run = (mark: boolean, tokens: number): Float32Array => {
      const ew = {
        gateUp: cpu.upload(gu, [E, 2 * I, D], 'bf16'),
        down: cpu.upload(dn, [E, D, I], 'bf16'),
        firstExpert: 0,
        numLocalExperts: E,
      };
      if (mark) {
        cpu.markDequantizedFp8(ew.gateUp, BLOCK_FP8);
        cpu.markDequantizedFp8(ew.down, BLOCK_FP8);
      }
      const out = cpu.alloc([tokens, D], 'f32');
      cpu.moe(
        out,
        cpu.upload(x.subarray(0, tokens * D), [tokens, D], 'bf16'),
        cpu.upload(ids.subarray(0, tokens), [tokens, 1], 'i32'),
        cpu.upload(rw.subarray(0, tokens), [tokens, 1], 'f32'),
        ew,
        o,
      );
      return cpu.readF32(out);
    };
    // The reference, token by token: down · Q(swiglu(gateUp · Q(x))) times the routing weight.
    const ref = new Float32Array(T * D);
    for (let t = 0; t < T; t++) {
      const e = ids[t]!;
      const xq = w8a8Dequantize(x.slice(t * D, (t + 1) * D), D);
      const h = new Float32Array(2 * I);
      for (let n = 0; n < 2 * I; n++) {
        let s = 0;
        for (let k = 0; k < D; k++) s += xq[k]! * gu[(e * 2 * I + n) * D + k]!;
        h[n] = s;
      }
      const act = new Float32Array(I);
      for (let i = 0; i < I; i++) {
        const g = Math.min(h[i]!, o.limit);
        const u = Math.min(Math.max(h[I + i]!, -o.limit), o.limit);
        act[i] = (g / (1 + Math.exp(-o.alpha * g))) * (u + 1);
      }
      w8a8Dequantize(act, I);
      for (let d = 0; d < D; d++) {
        let s = 0;
        for (let i = 0; i < I; i++) s += act[i]! * dn[(e * D + d) * I + i]!;
        ref[t * D + d] = rw[t]! * s;
      }
    }
    const marked = run(true, T);
    expect(relErr(marked, ref)).toBeLessThan(1e-5);
    expect(relErr(run(false, T), ref)).toBeGreaterThan(1e-3);
    // Below 257 tokens the marked experts compute W8A16: as unmarked ones.
    expect(run(true, T - 1)).toEqual(run(false, T - 1));
  });
});
