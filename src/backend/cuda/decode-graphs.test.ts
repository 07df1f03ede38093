import { describe, expect, it } from 'vitest';
import type { ForwardBatch } from '../forward-batch.js';
import { layoutBatch } from '../forward-batch.js';
import { graphBatchSizes, padDecodeBatch } from './decode-graphs.js';

describe('CUDA graph batch sizes (vLLM capture list)', () => {
  it('is 1, 2, 4, then multiples of 8 up to the first size covering the cap', () => {
    expect(graphBatchSizes(1)).toEqual([1]);
    expect(graphBatchSizes(3)).toEqual([1, 2, 4]);
    expect(graphBatchSizes(8)).toEqual([1, 2, 4, 8]);
    expect(graphBatchSizes(30)).toEqual([1, 2, 4, 8, 16, 24, 32]);
    expect(graphBatchSizes(64)).toEqual([1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]);
    expect(() => graphBatchSizes(0)).toThrow(/positive integer/);
  });
});

describe('padDecodeBatch', () => {
  const batch: ForwardBatch = {
    tokenIds: Int32Array.of(7, 9, 11),
    seqs: [5, 0, 12].map((n, i) => ({
      numCached: n,
      numNew: 1,
      pageTable: Int32Array.from({ length: Math.floor(n / 4) + 1 }, (_, p) => 10 * i + p),
    })),
    pageSize: 4,
    logitsFor: 'last',
  };

  it('keeps the real rows first and puts the dummies on the padding page at position 0', () => {
    const p = padDecodeBatch(batch, 8, 99, 16);
    expect(p.seqs).toHaveLength(8);
    expect(Array.from(p.tokenIds)).toEqual([7, 9, 11, 0, 0, 0, 0, 0]);
    expect(p.pageTableStride).toBe(16);
    const l = layoutBatch(p);
    expect(Array.from(l.positions)).toEqual([5, 0, 12, 0, 0, 0, 0, 0]);
    expect(Array.from(l.slots.subarray(0, 3))).toEqual([1 * 4 + 1, 10 * 4, 23 * 4]);
    expect(Array.from(l.slots.subarray(3))).toEqual(Array(5).fill(99 * 4));
    expect(Array.from(l.logitRows)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('refuses to pad to fewer sequences', () => {
    expect(() => padDecodeBatch(batch, 2, 99, 16)).toThrow(/cannot pad 3/);
  });
});
