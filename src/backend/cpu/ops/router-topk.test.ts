import { describe, expect, it } from 'vitest';
import { routerTopKRows } from './moe.js';

/** The definition: sort experts by (sigmoid + bias) descending, ties to the lower id. */
function bySort(logits: Float32Array, bias: Float32Array | null, E: number, K: number) {
  const T = logits.length / E;
  const ids: number[] = [];
  const weights: number[] = [];
  for (let t = 0; t < T; t++) {
    const s = Array.from({ length: E }, (_, e) => 1 / (1 + Math.exp(-logits[t * E + e]!)));
    const sel = (e: number): number => s[e]! + (bias ? bias[e]! : 0);
    const order = Array.from({ length: E }, (_, e) => e).sort((a, b) => sel(b) - sel(a) || a - b);
    let sum = 0;
    for (let j = 0; j < K; j++) sum += s[order[j]!]!;
    for (let j = 0; j < K; j++) {
      ids.push(order[j]!);
      weights.push(Math.fround((s[order[j]!]! / sum) * 2.5));
    }
  }
  return { ids, weights };
}

describe('routerTopKRows', () => {
  it('picks what a sort by (biased score desc, id asc) puts first, ties included', () => {
    const [T, E, K] = [40, 16, 4];
    const logits = Float32Array.from(
      { length: T * E },
      (_, i) => Math.round(Math.sin(i * 7.3) * 3) / 2,
    );
    const bias = Float32Array.from({ length: E }, (_, e) => (e % 3) * 0.125);
    for (const b of [null, bias]) {
      const ids = new Int32Array(T * K);
      const weights = new Float32Array(T * K);
      routerTopKRows(ids, weights, logits, b, E, { topK: K, scale: 2.5, sharedExpertId: null });
      const want = bySort(logits, b, E, K);
      expect(Array.from(ids)).toEqual(want.ids);
      expect(Array.from(weights)).toEqual(want.weights);
    }
  });

  it('appends the fused shared expert with weight 1', () => {
    const ids = new Int32Array(3);
    const weights = new Float32Array(3);
    routerTopKRows(ids, weights, Float32Array.from([0, 2, 1, -1]), null, 4, {
      topK: 2,
      scale: 1,
      sharedExpertId: 4,
    });
    expect(Array.from(ids)).toEqual([1, 2, 4]);
    expect(weights[2]).toBe(1);
  });
});
