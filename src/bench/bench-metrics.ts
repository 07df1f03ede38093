import { summarizeMs, type Summary } from './stats.js';
import { tpotOf, type RequestTiming } from './request-timing.js';

/** One finished request as the metrics see it: absolute start (s) plus its timing. */
export interface TimedRequest {
  startS: number;
  timing: RequestTiming;
}

export interface BenchMetrics {
  completed: number;
  failed: number;
  durationS: number;
  totalInputTokens: number;
  totalOutputTokens: number;
  requestThroughput: number;
  inputThroughput: number;
  outputThroughput: number;
  totalThroughput: number;
  e2e: Summary;
  ttft: Summary;
  tpot: Summary;
  itl: Summary;
  /**
   * Output tokens per SSE event that counts as a token chunk under the TTFT convention: 1.0
   * when every token streams as its own event; above 1 when the server sent tokens in bursts.
   */
  tokensPerEvent: number;
  /**
   * Lower bound on the fraction of those events that carry exactly one token: with N tokens in
   * E events of at least one token each, at least 2E − N events carry one.
   */
  oneTokenEventsMin: number;
  /** ΣE2E / duration: mean number of requests in flight (SGLang). */
  concurrency: number;
  maxOutputTokensPerS: number;
  maxConcurrentRequests: number;
  /** Successful requests whose token counts did not come from `usage`. */
  numWithoutUsage: number;
  errors: string[];
}

/**
 * Aggregates per serving-anchors §2.2 over successful requests. `benchStartS` is the first
 * dispatch after warm-up; `durationS` runs from there to the last completion.
 */
export function computeBenchMetrics(
  ok: readonly TimedRequest[],
  errors: readonly string[],
  benchStartS: number,
  durationS: number,
): BenchMetrics {
  const dur = durationS > 0 ? durationS : Number.EPSILON;
  let inTok = 0;
  let outTok = 0;
  let e2eSum = 0;
  const tpots: number[] = [];
  const itls: number[] = [];
  let events = 0;
  for (const r of ok) {
    events += r.timing.outputTokens > 0 ? 1 + r.timing.itl.length : 0;
    inTok += r.timing.promptTokens;
    outTok += r.timing.outputTokens;
    e2eSum += r.timing.e2e;
    const tpot = tpotOf(r.timing);
    if (tpot !== undefined) tpots.push(tpot);
    for (const g of r.timing.itl) itls.push(g);
  }
  return {
    completed: ok.length,
    failed: errors.length,
    durationS,
    totalInputTokens: inTok,
    totalOutputTokens: outTok,
    requestThroughput: ok.length / dur,
    inputThroughput: inTok / dur,
    outputThroughput: outTok / dur,
    totalThroughput: (inTok + outTok) / dur,
    e2e: summarizeMs(ok.map((r) => r.timing.e2e)),
    ttft: summarizeMs(ok.map((r) => r.timing.ttft)),
    tpot: summarizeMs(tpots),
    itl: summarizeMs(itls),
    tokensPerEvent: events > 0 ? outTok / events : 0,
    oneTokenEventsMin: events > 0 ? Math.min(1, Math.max(0, (2 * events - outTok) / events)) : 0,
    concurrency: e2eSum / dur,
    maxOutputTokensPerS: peakOutputTokensPerS(ok, benchStartS),
    maxConcurrentRequests: peakConcurrentRequests(ok),
    numWithoutUsage: ok.filter((r) => !r.timing.usageReported).length,
    errors: errors.slice(0, 10),
  };
}

/**
 * Peak of 1-second buckets of reconstructed chunk times (start + TTFT + cumsum ITL). Each
 * chunk carries outputTokens / chunks tokens, which is exactly 1 when chunks are tokens and
 * keeps multi-token chunks (spec decoding, stream intervals) from being undercounted.
 */
export function peakOutputTokensPerS(ok: readonly TimedRequest[], benchStartS: number): number {
  const buckets = new Map<number, number>();
  for (const r of ok) {
    const chunks = 1 + r.timing.itl.length;
    const perChunk = r.timing.outputTokens / chunks;
    let t = r.startS + r.timing.ttft;
    for (let i = 0; i < chunks; i++) {
      if (i > 0) t += r.timing.itl[i - 1] as number;
      const b = Math.floor(t - benchStartS);
      buckets.set(b, (buckets.get(b) ?? 0) + perChunk);
    }
  }
  let peak = 0;
  for (const v of buckets.values()) peak = Math.max(peak, v);
  return peak;
}

/** Exact sweep line over [start, start + E2E] intervals. */
export function peakConcurrentRequests(ok: readonly TimedRequest[]): number {
  const events: [number, number][] = [];
  for (const r of ok) {
    events.push([r.startS, 1]);
    events.push([r.startS + r.timing.e2e, -1]);
  }
  // Ends sort before starts at the same instant so back-to-back requests do not overlap.
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let cur = 0;
  let peak = 0;
  for (const [, d] of events) {
    cur += d;
    peak = Math.max(peak, cur);
  }
  return peak;
}
