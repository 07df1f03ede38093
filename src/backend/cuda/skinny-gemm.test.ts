import { describe, expect, it } from 'vitest';
import { gemvDefines, gemvTuneFor, gemvWarps } from './fp8-gemv.js';
import { fp8DenseKernel, fp8MoeKernel, skinnySliceRows, skinnySplits } from './skinny-gemm.js';

// H200: 132 SMs. Shapes of MiniMax-M3's decode GEMMs ([N, K]).
const SMS = 132;

describe('skinny GEMM plan', () => {
  it('slices small weights by tokens at large M, so their blocks fill the GPU', () => {
    // k/v projection [512, 6144] bf16: 4 column blocks; all 64 rows in one block row allow
    // only 128/64 = 2 splits (8 blocks); 16-row slices allow 8 (128 blocks).
    expect(skinnySplits(SMS, 'b', 64, 512, 6144)).toBe(2);
    expect(skinnySliceRows(SMS, 'b', 64, 512, 6144)).toBe(16);
    expect(skinnySplits(SMS, 'b', 64, 512, 6144, 16)).toBe(8);
    expect(skinnySliceRows(SMS, 'b', 32, 512, 6144)).toBe(8);
    expect(skinnySliceRows(SMS, 'h8', 64, 128, 6144)).toBe(8);
  });
  it('keeps all tokens in one block row where the columns fill the GPU', () => {
    expect(skinnySliceRows(SMS, 'b', 8, 512, 6144)).toBe(8);
    expect(skinnySliceRows(SMS, 'b', 1, 512, 6144)).toBe(1);
    expect(skinnySliceRows(SMS, 'h8', 64, 200064, 6144)).toBe(64);
    expect(skinnySliceRows(SMS, 'blk', 64, 24576, 6144)).toBe(64);
  });
  it('slices large weights only in two halves of 32 rows', () => {
    // FP8 o_proj (50 MB) at M = 64: 48 column blocks x 2 splits fill under half the slots.
    expect(skinnySliceRows(SMS, 'h8', 64, 6144, 8192)).toBe(32);
    expect(skinnySliceRows(SMS, 'blk', 64, 8192, 6144)).toBe(32);
    expect(skinnySliceRows(SMS, 'blk', 32, 8192, 6144)).toBe(32);
  });
  it('caps splits by the K stages and the last block reduction', () => {
    expect(skinnySplits(SMS, 'h8', 1, 512, 6144)).toBe(24);
    expect(skinnySplits(SMS, 'b', 1, 512, 6144)).toBe(32);
    expect(skinnySplits(SMS, 'h8', 1, 200064, 6144)).toBe(1);
  });
});

describe('GEMV warps per block', () => {
  it('fills the GPU in one wave when the 16-row blocks do not', () => {
    expect(gemvWarps(SMS, 200064, 6144)).toBe(1);
    expect(gemvWarps(SMS, 24576, 6144)).toBe(1);
    expect(gemvWarps(SMS, 8192, 6144)).toBe(4);
    expect(gemvWarps(SMS, 6144, 12288)).toBe(5);
    expect(gemvWarps(SMS, 512, 6144)).toBe(16);
    expect(gemvWarps(SMS, 512, 256)).toBe(2);
  });
});

describe('FP8 decode kernel choice', () => {
  it('follows the measurements (session 6 W2, session 8 W5, session 12 W3)', () => {
    const q = 8192 * 6144;
    const head = 200064 * 6144;
    expect([1, 8, 9, 16, 17, 32, 33, 64].map((m) => fp8DenseKernel(m, q))).toEqual([
      'v8',
      'v8',
      'v8',
      'v8',
      'v8',
      'v8',
      'w8a16',
      'w8a16',
    ]);
    expect([1, 16, 17, 32, 33].map((m) => fp8DenseKernel(m, head))).toEqual([
      'v8',
      'v8',
      'h8',
      'h8',
      'w8a16',
    ]);
    expect(fp8DenseKernel(32, head, 'v8')).toBe('v8');
    expect([1, 8, 9, 64, 65, 2048].map((t) => fp8MoeKernel(t))).toEqual([
      'v8',
      'v8',
      'h8',
      'h8',
      'w8a16',
      'w8a16',
    ]);
  });
});

describe('v8 knobs matmul runs', () => {
  it('follow session 12 W3/W11: two buffers to 8 tokens, two 16-row tiles to 16, two buffers at 255 registers beyond', () => {
    expect([1, 8, 9, 16, 17, 32].map((m) => gemvTuneFor(m))).toEqual([
      { u: 0, prefetch: true, pipe: true },
      { u: 0, prefetch: true, pipe: true },
      { u: 2, prefetch: true, pipe: false, mt: 2 },
      { u: 2, prefetch: true, pipe: false, mt: 2 },
      { u: 0, prefetch: true, pipe: true, lb: true },
      { u: 0, prefetch: true, pipe: true, lb: true },
    ]);
  });
  it('become the kernel defines the precompile also builds', () => {
    expect(gemvDefines(gemvTuneFor(17))).toEqual({
      GV_U: 0,
      GV_PF: 1,
      GV_PIPE: 1,
      GV_MT: 1,
      GV_LB: 1,
    });
    expect(gemvDefines(gemvTuneFor(16)).GV_MT).toBe(2);
  });
});
