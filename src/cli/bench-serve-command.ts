import { appendFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  buildDataset,
  DATASET_NAMES,
  type DatasetName,
  type DatasetOptions,
} from '../bench/build-dataset.js';
import type { BenchMetrics } from '../bench/bench-metrics.js';
import {
  detailFields,
  formatReport,
  formatSweepTable,
  resultRecord,
  type BenchRunMeta,
} from '../bench/bench-report.js';
import { newProgress, runBenchmark, type BenchRunConfig } from '../bench/bench-runner.js';
import type { Backend } from '../bench/openai-stream-request.js';
import { ProgressLine } from '../bench/progress-line.js';
import type { RangeRatioConvention } from '../bench/random-dataset.js';
import type { TtftConvention } from '../bench/request-timing.js';
import type { PromptTokenizer } from '../bench/random-token-dataset.js';
import { firstModelId, flushCache } from '../bench/server-probe.js';
import { BUNDLED_MODEL_DIR, BUNDLED_MODEL_NAME } from '../config/bundled-model.js';
import { loadTokenizer } from '../tokenizer/load-tokenizer.js';
import { BENCH_SERVE_OPTIONS } from './bench-serve-options.js';
import { intOption, numberOption, UsageError, type Command } from './command.js';

type Values = Record<string, unknown>;

export function choice<T extends string>(values: Values, name: string, allowed: readonly T[]): T {
  const v = String(values[name]);
  if (!allowed.includes(v as T))
    throw new UsageError(`--${name} must be one of ${allowed.join(', ')} (got "${v}")`);
  return v as T;
}

/** A positive number or `inf`. */
export function rateOption(values: Values, name: string): number {
  const v = String(values[name]).toLowerCase();
  if (v === 'inf' || v === 'infinity') return Infinity;
  const n = Number(v);
  if (!(n > 0)) throw new UsageError(`--${name} must be > 0 or inf (got "${v}")`);
  return n;
}

/** `--max-concurrency 1,4,16`; absent means one unlimited run. */
export function concurrencyList(values: Values): number[] {
  const v = values['max-concurrency'];
  if (v === undefined) return [Infinity];
  return String(v)
    .split(',')
    .map((s) => {
      const n = Number(s.trim());
      if (!Number.isInteger(n) || n < 1) throw new UsageError(`bad --max-concurrency entry "${s}"`);
      return n;
    });
}

function headersOf(values: Values): Record<string, string> {
  const key = values['api-key'];
  return typeof key === 'string' ? { authorization: `Bearer ${key}` } : {};
}

function datasetOf(values: Values): DatasetOptions {
  const sharegptLen = values['sharegpt-output-len'];
  return {
    name: choice<DatasetName>(values, 'dataset-name', DATASET_NAMES),
    path: values['dataset-path'] as string | undefined,
    numPrompts: intOption(values, 'num-prompts', 1000),
    seed: intOption(values, 'seed', 1),
    randomInputLen: intOption(values, 'random-input-len', 1024),
    randomOutputLen: intOption(values, 'random-output-len', 1024),
    randomRangeRatio: numberOption(values, 'random-range-ratio', 0),
    rangeRatioConvention: choice<RangeRatioConvention>(values, 'range-ratio-convention', [
      'sglang',
      'vllm',
    ]),
    sharegptOutputLen:
      sharegptLen === undefined ? undefined : intOption(values, 'sharegpt-output-len', 0),
    sharedPrefix: {
      numGroups: intOption(values, 'gsp-num-groups', 64),
      promptsPerGroup: intOption(values, 'gsp-prompts-per-group', 16),
      systemPromptLen: intOption(values, 'gsp-system-prompt-len', 2048),
      questionLen: intOption(values, 'gsp-question-len', 128),
      outputLen: intOption(values, 'gsp-output-len', 256),
    },
  };
}

function defaultOutputFile(backend: string, values: Values): string {
  const d = new Date();
  const mmdd = `${String(d.getMonth() + 1).padStart(2, '0')}${String(d.getDate()).padStart(2, '0')}`;
  return `${backend}_${mmdd}_${String(values['num-prompts'])}_${String(values['random-input-len'])}_${String(values['random-output-len'])}.jsonl`;
}

function extraBodyOf(values: Values): Record<string, unknown> | undefined {
  const raw = values['extra-request-body'];
  if (typeof raw !== 'string') return undefined;
  try {
    return JSON.parse(raw) as Record<string, unknown>;
  } catch {
    throw new UsageError('--extra-request-body must be a JSON object');
  }
}

/**
 * The tokenizer `--dataset-name random` draws from: `--tokenizer` (a model directory or its
 * tokenizer.json), else the bundled model's when it is the one served, else `--model` when that
 * is a local model directory (SGLang likewise loads the tokenizer on the client side).
 */
function benchTokenizer(values: Values, model: string): PromptTokenizer {
  const spec = values['tokenizer'];
  const dir =
    typeof spec === 'string'
      ? spec.endsWith('.json')
        ? dirname(spec)
        : spec
      : model === BUNDLED_MODEL_NAME
        ? BUNDLED_MODEL_DIR
        : existsSync(join(model, 'tokenizer.json'))
          ? model
          : undefined;
  if (dir === undefined)
    throw new UsageError(
      `--dataset-name random draws token ids from the model's tokenizer: pass --tokenizer ` +
        `DIR|tokenizer.json for "${model}" (or use --dataset-name random-words)`,
    );
  return loadTokenizer(dir);
}

async function baseConfig(values: Values): Promise<Omit<BenchRunConfig, 'maxConcurrency'>> {
  const baseUrl = String(values['base-url']);
  const headers = headersOf(values);
  const extraBody = extraBodyOf(values);
  const model =
    typeof values['model'] === 'string' ? values['model'] : await firstModelId(baseUrl, headers);
  const dataset = datasetOf(values);
  if (dataset.name === 'random') dataset.tokenizer = benchTokenizer(values, model);
  return {
    baseUrl,
    backend: choice<Backend>(values, 'backend', ['openai', 'openai-chat']),
    model,
    requests: buildDataset(dataset),
    requestRate: rateOption(values, 'request-rate'),
    burstiness: rateOption(values, 'burstiness'),
    seed: dataset.seed,
    warmupRequests: intOption(values, 'warmup-requests', 1),
    ignoreEos: values['ignore-eos'] === true,
    temperature: numberOption(values, 'temperature', 0),
    timeoutMs: numberOption(values, 'request-timeout', 3600) * 1000,
    convention: choice<TtftConvention>(values, 'ttft-convention', ['sglang', 'vllm']),
    headers,
    ...(extraBody ? { extraBody } : {}),
  };
}

function metaOf(values: Values, cfg: BenchRunConfig, runIndex: number): BenchRunMeta {
  const sharegptLen = values['sharegpt-output-len'];
  return {
    tag: String(values['tag'] ?? ''),
    backend: cfg.backend,
    model: cfg.model,
    baseUrl: cfg.baseUrl,
    datasetName: String(values['dataset-name']),
    numPrompts: cfg.requests.length,
    requestRate: cfg.requestRate,
    burstiness: cfg.burstiness,
    maxConcurrency: cfg.maxConcurrency,
    sharegptOutputLen: sharegptLen === undefined ? null : Number(sharegptLen),
    randomInputLen: Number(values['random-input-len']),
    randomOutputLen: Number(values['random-output-len']),
    randomRangeRatio: Number(values['random-range-ratio']),
    rangeRatioConvention: String(values['range-ratio-convention']),
    ttftConvention: cfg.convention,
    seed: cfg.seed,
    runIndex,
  };
}

async function runOne(values: Values, cfg: BenchRunConfig, runIndex: number, outFile: string) {
  if (values['flush-cache'] === true && !(await flushCache(cfg.baseUrl, cfg.headers)))
    console.error('warning: neither /flush_cache nor /reset_prefix_cache answered');
  const progress = newProgress(cfg.requests.length);
  const line = new ProgressLine();
  const label = `conc ${Number.isFinite(cfg.maxConcurrency) ? cfg.maxConcurrency : 'inf'} run ${runIndex}`;
  line.start(progress, label);
  const result = await runBenchmark(cfg, progress).finally(() => line.stop());
  const meta = metaOf(values, cfg, runIndex);
  const record = resultRecord(meta, result.metrics);
  const details = values['output-details'] === true ? detailFields(result.ok) : {};
  appendFileSync(outFile, JSON.stringify({ ...record, ...details }) + '\n');
  console.log(formatReport(meta, result.metrics));
  return { meta, m: result.metrics };
}

/** `moeserve bench serve`: SGLang bench_serving-style load test of any OpenAI-compatible server. */
export const benchServeCommand: Command = {
  name: 'bench serve',
  summary: 'load-test an OpenAI-compatible server (SGLang bench_serving flags and metrics)',
  options: BENCH_SERVE_OPTIONS,
  async run(values) {
    const base = await baseConfig(values);
    const outFile =
      typeof values['output-file'] === 'string'
        ? values['output-file']
        : defaultOutputFile(base.backend, values);
    const runs: { meta: BenchRunMeta; m: BenchMetrics }[] = [];
    for (const maxConcurrency of concurrencyList(values)) {
      for (let r = 0; r < intOption(values, 'num-runs', 1); r++)
        runs.push(await runOne(values, { ...base, maxConcurrency }, r, outFile));
    }
    if (runs.length > 1) console.log(`\nSweep summary (ms, tok/s)\n${formatSweepTable(runs)}`);
    console.error(`results appended to ${outFile}`);
    return runs.some((x) => x.m.completed === 0) ? 1 : 0;
  },
};
