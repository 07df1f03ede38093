import { describe, expect, it } from 'vitest';
import { arrivalOffsetsS } from './arrival-schedule.js';
import { lengthRange, randomWordsDataset } from './random-dataset.js';
import { SeededRng } from './seeded-rng.js';
import { sharedPrefixDataset } from './shared-prefix-dataset.js';

describe('lengthRange', () => {
  it('follows the SGLang meaning of the range ratio', () => {
    expect(lengthRange(1024, 0, 'sglang')).toEqual([1, 1024]);
    expect(lengthRange(1024, 0.5, 'sglang')).toEqual([512, 1024]);
    expect(lengthRange(1024, 1, 'sglang')).toEqual([1024, 1024]);
  });

  it('follows the vLLM meaning of the range ratio', () => {
    expect(lengthRange(1024, 0, 'vllm')).toEqual([1024, 1024]);
    expect(lengthRange(100, 0.25, 'vllm')).toEqual([75, 125]);
    expect(() => lengthRange(100, 1, 'vllm')).toThrow(RangeError);
  });
});

describe('randomWordsDataset', () => {
  it('is deterministic per seed and respects the drawn lengths', () => {
    const opts = { numPrompts: 50, inputLen: 64, outputLen: 16, rangeRatio: 0.5 } as const;
    const a = randomWordsDataset({ ...opts, convention: 'sglang' }, new SeededRng(7));
    const b = randomWordsDataset({ ...opts, convention: 'sglang' }, new SeededRng(7));
    expect(a).toEqual(b);
    for (const r of a) {
      expect(r.prompt.split(' ')).toHaveLength(r.promptLen);
      expect(r.promptLen).toBeGreaterThanOrEqual(32);
      expect(r.promptLen).toBeLessThanOrEqual(64);
      expect(r.outputLen).toBeGreaterThanOrEqual(8);
      expect(r.outputLen).toBeLessThanOrEqual(16);
    }
    const c = randomWordsDataset({ ...opts, convention: 'sglang' }, new SeededRng(8));
    expect(c[0]?.prompt).not.toEqual(a[0]?.prompt);
  });
});

describe('sharedPrefixDataset', () => {
  it('gives every prompt of a group the same system prefix', () => {
    const opts = { numGroups: 3, promptsPerGroup: 4, systemPromptLen: 20, questionLen: 5 };
    const reqs = sharedPrefixDataset({ ...opts, outputLen: 8 }, new SeededRng(1));
    expect(reqs).toHaveLength(12);
    const prefixes = new Map<string, number>();
    for (const r of reqs) {
      const p = r.prompt.split('\n\n')[0] as string;
      prefixes.set(p, (prefixes.get(p) ?? 0) + 1);
    }
    expect([...prefixes.values()]).toEqual([4, 4, 4]);
  });
});

describe('arrivalOffsetsS', () => {
  it('sends everything at once for an infinite rate and evenly for constant arrivals', () => {
    expect(arrivalOffsetsS(3, Infinity, 1, new SeededRng(1))).toEqual([0, 0, 0]);
    const c = arrivalOffsetsS(4, 10, Infinity, new SeededRng(1));
    c.forEach((t, i) => expect(t).toBeCloseTo(i * 0.1, 12));
  });

  it('keeps the mean rate for Poisson and bursty arrivals', () => {
    for (const burstiness of [1, 0.5, 4]) {
      const o = arrivalOffsetsS(20_001, 50, burstiness, new SeededRng(3));
      expect((o[20_000] as number) / 20_000).toBeCloseTo(0.02, 3);
    }
  });
});
