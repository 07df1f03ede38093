import type { BenchMetrics, TimedRequest } from './bench-metrics.js';
import type { Summary } from './stats.js';

/** What identifies a run in its JSON line and report header. */
export interface BenchRunMeta {
  tag: string;
  backend: string;
  model: string;
  baseUrl: string;
  datasetName: string;
  numPrompts: number;
  requestRate: number;
  burstiness: number;
  /** Infinity when unlimited. */
  maxConcurrency: number;
  sharegptOutputLen: number | null;
  randomInputLen: number;
  randomOutputLen: number;
  randomRangeRatio: number;
  rangeRatioConvention: string;
  ttftConvention: string;
  seed: number;
  runIndex: number;
}

const num = (x: number): number | string => (Number.isFinite(x) ? x : 'inf');

function summaryFields(name: string, s: Summary): Record<string, number> {
  return {
    [`mean_${name}_ms`]: s.mean,
    [`median_${name}_ms`]: s.median,
    [`std_${name}_ms`]: s.std,
    [`p90_${name}_ms`]: s.p90,
    [`p95_${name}_ms`]: s.p95,
    [`p99_${name}_ms`]: s.p99,
  };
}

/** One JSONL line with SGLang's field names (serving-anchors §2.3) plus vLLM's `failed`. */
export function resultRecord(meta: BenchRunMeta, m: BenchMetrics): Record<string, unknown> {
  return {
    tag: meta.tag,
    date: new Date().toISOString(),
    backend: meta.backend,
    model: meta.model,
    base_url: meta.baseUrl,
    dataset_name: meta.datasetName,
    num_prompts: meta.numPrompts,
    request_rate: num(meta.requestRate),
    burstiness: num(meta.burstiness),
    max_concurrency: Number.isFinite(meta.maxConcurrency) ? meta.maxConcurrency : null,
    sharegpt_output_len: meta.sharegptOutputLen,
    random_input_len: meta.randomInputLen,
    random_output_len: meta.randomOutputLen,
    random_range_ratio: meta.randomRangeRatio,
    range_ratio_convention: meta.rangeRatioConvention,
    ttft_convention: meta.ttftConvention,
    seed: meta.seed,
    run_index: meta.runIndex,
    duration: m.durationS,
    completed: m.completed,
    failed: m.failed,
    total_input_tokens: m.totalInputTokens,
    total_output_tokens: m.totalOutputTokens,
    request_throughput: m.requestThroughput,
    input_throughput: m.inputThroughput,
    output_throughput: m.outputThroughput,
    total_throughput: m.totalThroughput,
    total_token_throughput: m.totalThroughput,
    ...summaryFields('e2e_latency', m.e2e),
    ...summaryFields('ttft', m.ttft),
    ...summaryFields('tpot', m.tpot),
    ...summaryFields('itl', m.itl),
    max_itl_ms: m.itl.max,
    tokens_per_sse_event: m.tokensPerEvent,
    one_token_sse_events_min: m.oneTokenEventsMin,
    concurrency: m.concurrency,
    accept_length: null,
    max_output_tokens_per_s: m.maxOutputTokensPerS,
    max_concurrent_requests: m.maxConcurrentRequests,
    num_without_usage: m.numWithoutUsage,
    errors: m.errors,
  };
}

/** `--output-details`: the per-request lists, as SGLang's flag of that name adds. */
export function detailFields(ok: readonly TimedRequest[]): Record<string, unknown> {
  return {
    input_lens: ok.map((r) => r.timing.promptTokens),
    output_lens: ok.map((r) => r.timing.outputTokens),
    ttfts: ok.map((r) => r.timing.ttft),
    e2e_latencies: ok.map((r) => r.timing.e2e),
    itls: ok.map((r) => r.timing.itl),
  };
}

const W = 50;
const title = (t: string, fill: string): string => {
  const pad = Math.max(0, W - t.length);
  return fill.repeat(Math.floor(pad / 2)) + t + fill.repeat(Math.ceil(pad / 2));
};
const row = (k: string, v: number | string, digits = 2): string =>
  `${k.padEnd(W - 10)}${typeof v === 'number' ? v.toFixed(digits) : v}`;

function latencyBlock(heading: string, label: string, s: Summary): string[] {
  return [
    title(heading, '-'),
    row(`Mean ${label} (ms):`, s.mean),
    row(`Median ${label} (ms):`, s.median),
    row(`P90 ${label} (ms):`, s.p90),
    row(`P95 ${label} (ms):`, s.p95),
    row(`P99 ${label} (ms):`, s.p99),
  ];
}

/** The end-of-run report, laid out like SGLang's bench_serving printout. */
export function formatReport(meta: BenchRunMeta, m: BenchMetrics): string {
  const lines = [
    title(' Serving Benchmark Result ', '='),
    row('Backend:', meta.backend),
    row('Traffic request rate:', String(num(meta.requestRate))),
    row('Max request concurrency:', String(num(meta.maxConcurrency))),
    row('Successful requests:', String(m.completed)),
    row('Failed requests:', String(m.failed)),
    row('Benchmark duration (s):', m.durationS),
    row('Total input tokens:', String(m.totalInputTokens)),
    row('Total generated tokens:', String(m.totalOutputTokens)),
    row('Request throughput (req/s):', m.requestThroughput),
    row('Input token throughput (tok/s):', m.inputThroughput),
    row('Output token throughput (tok/s):', m.outputThroughput),
    row('Peak output token throughput (tok/s):', m.maxOutputTokensPerS),
    row('Peak concurrent requests:', String(m.maxConcurrentRequests)),
    row('Total token throughput (tok/s):', m.totalThroughput),
    row('Concurrency:', m.concurrency),
    ...latencyBlock('End-to-End Latency', 'E2E Latency', m.e2e),
    ...latencyBlock('Time to First Token', 'TTFT', m.ttft),
    ...latencyBlock('Time per Output Token (excl. 1st token)', 'TPOT', m.tpot),
    ...latencyBlock('Inter-Token Latency', 'ITL', m.itl),
    row('Max ITL (ms):', m.itl.max),
    row('Tokens per SSE event:', m.tokensPerEvent, 3),
    row('One-token SSE events (at least, %):', 100 * m.oneTokenEventsMin, 1),
    '='.repeat(W),
    `TTFT/ITL/E2E convention: ${meta.ttftConvention}; ITL is per chunk.`,
  ];
  if (m.numWithoutUsage > 0)
    lines.push(`warning: ${m.numWithoutUsage} responses had no usage; chunks counted as tokens`);
  if (m.errors.length > 0) lines.push('First errors:', ...m.errors.map((e) => `  ${e}`));
  return lines.join('\n');
}

/** One row per run, for sweeps. */
export function formatSweepTable(runs: readonly { meta: BenchRunMeta; m: BenchMetrics }[]): string {
  const head = [
    'conc',
    'run',
    'ok',
    'fail',
    'out tok/s',
    'TTFT p50',
    'TPOT p50',
    'TPOT p99',
    'ITL p50',
    'tok/event',
  ];
  const rows = runs.map(({ meta, m }) => [
    String(num(meta.maxConcurrency)),
    String(meta.runIndex),
    String(m.completed),
    String(m.failed),
    m.outputThroughput.toFixed(1),
    m.ttft.median.toFixed(2),
    m.tpot.median.toFixed(2),
    m.tpot.p99.toFixed(2),
    m.itl.median.toFixed(2),
    m.tokensPerEvent.toFixed(2),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const fmt = (cells: string[]): string =>
    cells.map((c, i) => c.padStart(widths[i] ?? 0)).join('  ');
  return [fmt(head), ...rows.map(fmt)].join('\n');
}
