import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { assembleWat, fmaVariant, packedBf16Variant } from '../../../../scripts/assemble-wat.mjs';
import { PackedPanels, packPanels, unpackPanels } from '../packed-panels.js';
import { CpuKernels } from './cpu-kernels.js';
import { fusedMultiplyAdd } from './fused-multiply-add.js';
import {
  MATMUL_PACKED_BF16_FMA_WASM_BASE64,
  MATMUL_PACKED_BF16_WASM_BASE64,
  MATMUL_PACKED_FMA_WASM_BASE64,
  MATMUL_PACKED_WASM_BASE64,
} from './kernels-wasm.js';

/** Deterministic values in [−0.5, 0.5); bf16-exact when `bf16` (low 16 bits cleared). */
function values(n: number, seed: number, bf16 = false): Float32Array {
  const a = new Float32Array(n);
  const bits = new Uint32Array(a.buffer);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    a[i] = s / 2 ** 31 - 0.5;
    if (bf16) bits[i] = bits[i]! & 0xffff0000;
  }
  return a;
}

/** The kernel's definition: out[i][j] = Σ_k x[i][k]·w[j][k], each product and sum rounded to f32, in k order. */
function sequentialF32(x: Float32Array, w: Float32Array, M: number, N: number, K: number) {
  const out = new Float32Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let acc = 0;
      for (let k = 0; k < K; k++)
        acc = Math.fround(acc + Math.fround(x[i * K + k]! * w[j * K + k]!));
      out[i * N + j] = acc;
    }
  }
  return out;
}

/**
 * The FMA kernel's definition: the same chain with each step fused, acc = fl32(acc + x[k]·w[k])
 * with one rounding. The float32 product is exact in float64; acc + product rounded to
 * float64 and then float32 could in principle round twice (where the float64 sum falls on a
 * float32 tie), which these inputs do not hit.
 */
function sequentialFma(x: Float32Array, w: Float32Array, M: number, N: number, K: number) {
  const out = new Float32Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let acc = 0;
      for (let k = 0; k < K; k++) acc = Math.fround(acc + x[i * K + k]! * w[j * K + k]!);
      out[i * N + j] = acc;
    }
  }
  return out;
}

/** The kernel variants this process runs: mul + add always, FMA where the runtime fuses. */
const FMA_MODES = fusedMultiplyAdd() ? [false, true] : [false];

function packed(k: CpuKernels, w: Float32Array, N: number, K: number, bf16: boolean): PackedPanels {
  if (!bf16) return new PackedPanels(packPanels(w, k.heap.f32(w.length), N, K));
  const bits = new Uint32Array(w.buffer, w.byteOffset, w.length);
  const src = Uint16Array.from(bits, (b) => b >>> 16);
  return new PackedPanels(packPanels(src, k.heap.u16(w.length), N, K));
}

function heapCopy(k: CpuKernels, a: Float32Array): Float32Array {
  const h = k.heap.f32(a.length);
  h.set(a);
  return h;
}

describe('register-blocked matmul on packed weights (matmul-packed.wat)', () => {
  it('embeds exactly the bytes matmul-packed.wat assembles to (run scripts/build-wasm.mjs after editing)', async () => {
    const wat = readFileSync(new URL('./matmul-packed.wat', import.meta.url), 'utf8');
    const f32 = await assembleWat(wat);
    expect(Buffer.from(f32).toString('base64')).toBe(MATMUL_PACKED_WASM_BASE64);
    const bf16 = await assembleWat(packedBf16Variant(wat));
    expect(Buffer.from(bf16).toString('base64')).toBe(MATMUL_PACKED_BF16_WASM_BASE64);
    const fma = await assembleWat(fmaVariant(wat));
    expect(Buffer.from(fma).toString('base64')).toBe(MATMUL_PACKED_FMA_WASM_BASE64);
    const bf16Fma = await assembleWat(fmaVariant(packedBf16Variant(wat)));
    expect(Buffer.from(bf16Fma).toString('base64')).toBe(MATMUL_PACKED_BF16_FMA_WASM_BASE64);
    expect(fmaVariant(wat)).not.toMatch(/f32x4\.mul/);
  });

  it('uses FMA by default exactly where the runtime fuses relaxed_madd; refuses fma when it cannot', () => {
    const k = new CpuKernels();
    expect(k.fma).toBe(fusedMultiplyAdd());
    k.close();
    if (!fusedMultiplyAdd()) expect(() => new CpuKernels({ fma: true })).toThrow(/fma/);
  });

  it('packs and unpacks [E, N, K] losslessly, each matrix at its own offset', () => {
    const [E, N, K] = [3, 16, 12];
    const w = values(E * N * K, 5);
    const p = new PackedPanels(packPanels(w, new Float32Array(w.length), N, K));
    expect(Array.from(unpackPanels(p, N, K))).toEqual(Array.from(w));
    // element (n, k) of matrix e
    const [e, n, k] = [2, 11, 7];
    expect(p.data[e * N * K + (n >> 3) * 8 * K + 8 * k + (n & 7)]).toBe(w[e * N * K + n * K + k]);
    const one = unpackPanels(p.subarray(N * K, 2 * N * K), N, K);
    expect(Array.from(one)).toEqual(Array.from(w.subarray(N * K, 2 * N * K)));
  });

  it.each([
    [1, 8, 4, false],
    [1, 24, 64, true],
    [1, 56, 20, true], // 1×32, 1×16 and 1×8 tiles in one row
    [2, 120, 8, false],
    [3, 40, 36, false],
    [4, 16, 256, true],
    [5, 264, 128, false], // one 5×8 row of tiles
    [10, 24, 40, true],
    [13, 48, 64, true], // 5×8, then 4×8 tiles
    [17, 136, 64, true],
    [32, 64, 36, false], // 5×8 and 4×8 tiles, no 1-row tiles
    [39, 16, 20, true],
    [64, 512, 256, true],
  ])(
    'M=%i N=%i K=%i (bf16 %s): the sequential float32 chain of every output (mul + add, and FMA where fused), bit for bit, at 1, 2 and 3 threads',
    (M, N, K, bf16) => {
      const xv = values(M * K, 1);
      const wv = values(N * K, 2, bf16);
      for (const fma of FMA_MODES) {
        const want = (fma ? sequentialFma : sequentialF32)(xv, wv, M, N, K);
        for (const threads of [1, 2, 3]) {
          const k = new CpuKernels({ threads, minParallelFlops: 0, fma });
          const out = k.heap.f32(M * N);
          k.matmul(out, heapCopy(k, xv), packed(k, wv, N, K, bf16), M, N, K);
          k.close();
          expect(out.every((v, i) => v === want[i])).toBe(true);
        }
      }
    },
  );

  it('a row gives the same bits alone as inside a batch (batch invariance)', () => {
    const [M, N, K] = [13, 48, 64];
    const k = new CpuKernels();
    const x = heapCopy(k, values(M * K, 3));
    const w = packed(k, values(N * K, 4, true), N, K, true);
    const all = k.heap.f32(M * N);
    k.matmul(all, x, w, M, N, K);
    for (const i of [0, 5, 12]) {
      const one = k.heap.f32(N);
      k.matmul(one, x.subarray(i * K, (i + 1) * K), w, 1, N, K);
      expect(Array.from(one)).toEqual(Array.from(all.subarray(i * N, (i + 1) * N)));
    }
    k.close();
  });

  it('rejects packed weights whose N is not whole panels', () => {
    const k = new CpuKernels();
    const w = new PackedPanels(k.heap.f32(12 * 4));
    expect(() => k.matmul(k.heap.f32(12), k.heap.f32(4), w, 1, 12, 4)).toThrow(/N % 8/);
    k.close();
  });
});
