import type { SeededRng } from './seeded-rng.js';

/**
 * Dispatch offsets (seconds from the benchmark start) for `n` requests, as vLLM draws them:
 * request i waits for the sum of the first i gaps. Gaps are Gamma(shape = burstiness,
 * scale = 1 / (rate · burstiness)), so the mean rate is `rate` for any burstiness; 1 is
 * Poisson, < 1 burstier, and Infinity gives constant 1/rate gaps. Rate Infinity sends all at 0.
 */
export function arrivalOffsetsS(
  n: number,
  requestRate: number,
  burstiness: number,
  rng: SeededRng,
): number[] {
  const offsets = new Array<number>(n).fill(0);
  if (requestRate === Infinity) return offsets;
  if (!(requestRate > 0)) throw new RangeError('request rate must be > 0 or inf');
  if (!(burstiness > 0)) throw new RangeError('burstiness must be > 0');
  let t = 0;
  for (let i = 1; i < n; i++) {
    t +=
      burstiness === Infinity
        ? 1 / requestRate
        : rng.gamma(burstiness, 1 / (requestRate * burstiness));
    offsets[i] = t;
  }
  return offsets;
}
