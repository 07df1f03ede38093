import { describe, expect, it } from 'vitest';
import { MOE_CUBLAS_MIN_TOKENS, moeGemmPath } from './moe-expert-gemm.js';

describe('MoE expert-GEMM path choice', () => {
  it('takes cuBLAS only for bf16 batches from the measured crossover, outside capture', () => {
    expect(moeGemmPath(MOE_CUBLAS_MIN_TOKENS, true, false)).toBe('per-expert-cublas');
    expect(moeGemmPath(8192, true, false)).toBe('per-expert-cublas');
    expect(moeGemmPath(MOE_CUBLAS_MIN_TOKENS - 1, true, false)).toBe('tiles');
    // A captured graph cannot hold the host read of the expert counts.
    expect(moeGemmPath(8192, true, true)).toBe('tiles');
    // f32 weights or odd shapes never reach the tensor-core paths.
    expect(moeGemmPath(8192, false, false)).toBe('tiles');
    // Grouped (MOESERVE_MOE_GROUPED=1) replaces the per-expert loop, nothing else.
    expect(moeGemmPath(8192, true, false, true)).toBe('grouped-cublas');
    expect(moeGemmPath(8192, true, true, true)).toBe('tiles');
  });
});
