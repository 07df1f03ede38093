import { describe, expect, it } from 'vitest';
import { laneOrder, MOE_CUBLAS_MIN_TOKENS, moeGemmPath } from './moe-expert-gemm.js';

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

describe('MoE expert lanes', () => {
  /** Offsets [E + 1] from rows per expert. */
  const offsets = (rows: number[]) =>
    Int32Array.from([0, ...rows.map((_, i) => rows.slice(0, i + 1).reduce((a, b) => a + b, 0))]);

  it('puts the shared expert alone on a lane and spreads the routed ones over the rest', () => {
    // 2,048 tokens: 128 routed experts of 64 rows (weight-bound, cost 192 each), shared 2,048.
    const order = laneOrder(offsets([...new Array<number>(128).fill(64), 2048]), 4);
    expect(order).toHaveLength(129);
    expect(order[0]).toEqual({ e: 128, lane: 0 }); // longest first
    const load = [0, 0, 0, 0];
    for (const { e, lane } of order) load[lane]! += e === 128 ? 2048 : 192;
    expect(Math.max(...load) - Math.min(...load)).toBeLessThanOrEqual(2048);
    expect(order.filter((o) => o.lane === 0).length).toBeLessThan(
      order.filter((o) => o.lane === 1).length,
    );
    expect(new Set(order.map((o) => o.e)).size).toBe(129);
  });

  it('skips experts without rows', () => {
    expect(laneOrder(offsets([0, 5, 0, 300]), 2)).toEqual([
      { e: 3, lane: 0 },
      { e: 1, lane: 1 },
    ]);
  });
});
