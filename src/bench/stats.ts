/** Aggregates with NumPy semantics: population std (ddof=0), linear-interpolation percentiles. */

export function mean(values: readonly number[]): number {
  if (values.length === 0) return 0;
  let s = 0;
  for (const v of values) s += v;
  return s / values.length;
}

export function std(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const m = mean(values);
  let s = 0;
  for (const v of values) s += (v - m) * (v - m);
  return Math.sqrt(s / values.length);
}

/** numpy.percentile(values, q) with the default 'linear' method; 0 for an empty list. */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return percentileSorted(sorted, q);
}

export function percentileSorted(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  const pos = ((sorted.length - 1) * q) / 100;
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, sorted.length - 1);
  const a = sorted[lo] as number;
  const b = sorted[hi] as number;
  return a + (b - a) * (pos - lo);
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

export interface Summary {
  mean: number;
  median: number;
  std: number;
  p90: number;
  p95: number;
  p99: number;
  max: number;
}

/** Summary of a list of seconds, reported in milliseconds as SGLang/vLLM do. */
export function summarizeMs(seconds: readonly number[]): Summary {
  const ms = seconds.map((s) => s * 1000);
  const sorted = [...ms].sort((a, b) => a - b);
  return {
    mean: mean(ms),
    median: percentileSorted(sorted, 50),
    std: std(ms),
    p90: percentileSorted(sorted, 90),
    p95: percentileSorted(sorted, 95),
    p99: percentileSorted(sorted, 99),
    max: sorted.length > 0 ? (sorted[sorted.length - 1] as number) : 0,
  };
}
