import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { arrivalOffsetsS } from './arrival-schedule.js';
import type { BenchRequest } from './bench-dataset.js';
import { computeBenchMetrics, type BenchMetrics, type TimedRequest } from './bench-metrics.js';
import { streamRequest, type Backend, type StreamRecord } from './openai-stream-request.js';
import { deriveTiming, type TtftConvention } from './request-timing.js';
import { SeededRng } from './seeded-rng.js';
import { Semaphore } from './semaphore.js';

export interface BenchRunConfig {
  baseUrl: string;
  backend: Backend;
  model: string;
  requests: readonly BenchRequest[];
  /** Infinity for no client-side limit. */
  maxConcurrency: number;
  requestRate: number;
  burstiness: number;
  seed: number;
  warmupRequests: number;
  ignoreEos: boolean;
  temperature: number;
  timeoutMs: number;
  convention: TtftConvention;
  extraBody?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** Live counters, read by the progress line while a run is going. */
export interface BenchProgress {
  total: number;
  started: number;
  completed: number;
  failed: number;
  outputTokens: number;
  startMs: number;
}

export interface BenchRunResult {
  metrics: BenchMetrics;
  records: StreamRecord[];
  ok: TimedRequest[];
}

export function newProgress(total = 0, startMs = 0): BenchProgress {
  return { total, started: 0, completed: 0, failed: 0, outputTokens: 0, startMs };
}

function send(cfg: BenchRunConfig, req: BenchRequest, maxTokens: number): Promise<StreamRecord> {
  return streamRequest({
    baseUrl: cfg.baseUrl,
    backend: cfg.backend,
    model: cfg.model,
    prompt: req.prompt,
    maxTokens,
    temperature: cfg.temperature,
    ignoreEos: cfg.ignoreEos,
    timeoutMs: cfg.timeoutMs,
    ...(cfg.extraBody ? { extraBody: cfg.extraBody } : {}),
    ...(cfg.headers ? { headers: cfg.headers } : {}),
  });
}

/** SGLang's warm-up: the first prompt, at most 32 output tokens, at the run's concurrency. */
async function warmUp(cfg: BenchRunConfig): Promise<void> {
  const first = cfg.requests[0];
  if (cfg.warmupRequests <= 0 || !first) return;
  const sem = new Semaphore(cfg.maxConcurrency);
  const runs = Array.from({ length: cfg.warmupRequests }, async () => {
    await sem.acquire();
    try {
      return await send(cfg, first, Math.min(first.outputLen, 32));
    } finally {
      sem.release();
    }
  });
  const failed = (await Promise.all(runs)).find((r) => !r.success);
  if (failed) throw new Error(`warm-up request failed: ${failed.error}`);
}

/** Dispatches every request at its arrival offset, behind the concurrency semaphore. */
async function dispatchAll(cfg: BenchRunConfig, p: BenchProgress): Promise<StreamRecord[]> {
  const offsets = arrivalOffsetsS(
    cfg.requests.length,
    cfg.requestRate,
    cfg.burstiness,
    new SeededRng(cfg.seed + 1),
  );
  const sem = new Semaphore(cfg.maxConcurrency);
  const one = async (req: BenchRequest): Promise<StreamRecord> => {
    await sem.acquire();
    p.started++;
    try {
      const rec = await send(cfg, req, req.outputLen);
      if (rec.success) p.completed++;
      else p.failed++;
      p.outputTokens += rec.outputTokens ?? rec.textTimes.length;
      return rec;
    } finally {
      sem.release();
    }
  };
  const tasks: Promise<StreamRecord>[] = [];
  for (const [i, req] of cfg.requests.entries()) {
    const wait = p.startMs + (offsets[i] ?? 0) * 1000 - performance.now();
    if (wait > 1) await sleep(wait);
    tasks.push(one(req));
  }
  return Promise.all(tasks);
}

/** Runs one benchmark (after warm-up) and aggregates its metrics. */
export async function runBenchmark(
  cfg: BenchRunConfig,
  progress?: BenchProgress,
): Promise<BenchRunResult> {
  await warmUp(cfg);
  const startMs = performance.now();
  const p = progress ?? newProgress();
  Object.assign(p, newProgress(cfg.requests.length, startMs));
  const records = await dispatchAll(cfg, p);
  const durationS = (performance.now() - startMs) / 1000;
  const ok: TimedRequest[] = [];
  const errors: string[] = [];
  records.forEach((rec, i) => {
    if (!rec.success) return void errors.push(rec.error);
    const timing = deriveTiming(rec, cfg.convention, cfg.requests[i]?.promptLen ?? 0);
    ok.push({ startS: rec.startMs / 1000, timing });
  });
  const metrics = computeBenchMetrics(ok, errors, startMs / 1000, durationS);
  return { metrics, records, ok };
}
