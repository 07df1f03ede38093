import { describe, expect, it } from 'vitest';
import { mean, median, percentile, std, summarizeMs } from './stats.js';

describe('stats (NumPy semantics)', () => {
  it('matches numpy.percentile linear interpolation', () => {
    expect(percentile([1, 2, 3, 4], 90)).toBeCloseTo(3.7, 12);
    expect(percentile([15, 20, 35, 40, 50], 40)).toBeCloseTo(29, 12);
    expect(percentile([50, 15, 40, 20, 35], 99)).toBeCloseTo(49.6, 12);
    expect(percentile([7], 95)).toBe(7);
    expect(percentile([], 50)).toBe(0);
  });

  it('uses the population std and the interpolated median', () => {
    expect(std([1, 2, 3, 4])).toBeCloseTo(1.118033988749895, 12);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(mean([1, 2, 3, 4])).toBe(2.5);
  });

  it('reports seconds as milliseconds', () => {
    const s = summarizeMs([0.01, 0.02, 0.03, 0.04]);
    expect(s.mean).toBeCloseTo(25, 9);
    expect(s.p99).toBeCloseTo(39.7, 9);
    expect(s.max).toBeCloseTo(40, 9);
  });
});
