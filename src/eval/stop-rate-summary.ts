import { percentile } from '../bench/stats.js';

/** One line of `<output>.jsonl`; `error` is set (and the rest absent) when the request failed. */
export interface StopRateRecord {
  idx: number;
  gold: string;
  latency_s: number;
  error?: string;
  finish_reason?: string;
  completion_tokens?: number | null;
  prompt_tokens?: number | null;
  reasoning_tokens?: number | null;
  reasoning_len?: number;
  content_len?: number;
  pred?: string;
  correct?: boolean;
}

export interface RunawayEntry {
  idx: number;
  finish_reason: string;
  completion_tokens: number | null;
  reasoning_len: number;
  content_len: number;
}

/** Seed 000's `<output>.jsonl.summary.json`. Rates are over the successful requests. */
export interface StopRateSummary {
  n_total: number;
  n_ok: number;
  n_err: number;
  finish_counts: Record<string, number>;
  stop_rate_pct: number;
  runaway_rate_pct: number;
  ct_p50: number;
  ct_p99: number;
  ct_max: number;
  gsm8k_acc_pct: number;
  /** Stopped normally but returned no content (e.g. EOS inside the reasoning block). */
  n_empty_content: number;
  runaways: RunawayEntry[];
  errors: string[];
}

const pct = (k: number, n: number): number => (n > 0 ? Math.round((10000 * k) / n) / 100 : 0);

/**
 * A runaway is a request that ran to max_tokens (finish_reason "length"). Completion-token
 * percentiles are NumPy-linear, rounded to whole tokens.
 */
export function summarizeStopRate(records: readonly StopRateRecord[]): StopRateSummary {
  const ok = records.filter((r) => r.error === undefined);
  const finishCounts: Record<string, number> = {};
  for (const r of ok) {
    const f = r.finish_reason ?? 'none';
    finishCounts[f] = (finishCounts[f] ?? 0) + 1;
  }
  const cts = ok.map((r) => r.completion_tokens).filter((c): c is number => typeof c === 'number');
  const runaways = ok
    .filter((r) => r.finish_reason === 'length')
    .map((r) => ({
      idx: r.idx,
      finish_reason: 'length',
      completion_tokens: r.completion_tokens ?? null,
      reasoning_len: r.reasoning_len ?? 0,
      content_len: r.content_len ?? 0,
    }));
  return {
    n_total: records.length,
    n_ok: ok.length,
    n_err: records.length - ok.length,
    finish_counts: finishCounts,
    stop_rate_pct: pct(finishCounts['stop'] ?? 0, ok.length),
    runaway_rate_pct: pct(runaways.length, ok.length),
    ct_p50: Math.round(percentile(cts, 50)),
    ct_p99: Math.round(percentile(cts, 99)),
    ct_max: cts.length > 0 ? Math.max(...cts) : 0,
    gsm8k_acc_pct: pct(ok.filter((r) => r.correct).length, ok.length),
    n_empty_content: ok.filter((r) => r.finish_reason === 'stop' && r.content_len === 0).length,
    runaways,
    errors: records
      .filter((r) => r.error !== undefined)
      .slice(0, 10)
      .map((r) => `#${r.idx}: ${r.error}`),
  };
}

/** The summary as the seeds quote it. */
export function formatStopRateSummary(s: StopRateSummary, artifact: string): string {
  const finish = Object.entries(s.finish_counts)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  const lines = [
    `Artifact: ${artifact}`,
    `n_total=${s.n_total}, n_ok=${s.n_ok}, n_err=${s.n_err}`,
    `finish_counts: ${finish || '(none)'}`,
    `stop_rate_pct=${s.stop_rate_pct.toFixed(1)}`,
    `runaway_rate_pct=${s.runaway_rate_pct.toFixed(1)}`,
    `ct_p50=${s.ct_p50}, ct_p99=${s.ct_p99}, ct_max=${s.ct_max}`,
    `gsm8k_acc_pct=${s.gsm8k_acc_pct.toFixed(1)}`,
  ];
  if (s.n_empty_content > 0) lines.push(`empty content with finish=stop: ${s.n_empty_content}`);
  for (const r of s.runaways)
    lines.push(
      `runaway #${r.idx}: completion_tokens=${r.completion_tokens ?? '?'} reasoning_len=${r.reasoning_len} content_len=${r.content_len}`,
    );
  if (s.errors.length > 0) lines.push('First errors:', ...s.errors.map((e) => `  ${e}`));
  return lines.join('\n');
}

/** The one-line total. */
export function formatStopRateTotal(s: StopRateSummary): string {
  const stopped = s.finish_counts['stop'] ?? 0;
  return (
    `total: ${s.n_total} requests, ${stopped} stopped (${s.stop_rate_pct.toFixed(1)}%), ` +
    `${s.runaways.length} runaways, ${s.n_err} errors; answer correct ${s.gsm8k_acc_pct.toFixed(1)}%`
  );
}
