import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { GenerateRequest } from '../engine/engine-types.js';
import { HostSamplingRunner } from '../engine/host-sampling-runner.js';
import { FakeModelRunner } from '../engine/fake-model-runner.js';
import { LlmEngine } from '../engine/llm-engine.js';
import type { ModelRunner } from '../engine/model-runner.js';
import { Rng } from '../engine/rng.js';
import { GREEDY, makeRequest, randomPrompt } from '../engine/test-helpers.js';

/**
 * Engine-level soak: `concurrency` clients send mixed requests for `seconds`, some cut short
 * by an AbortSignal or by the reader walking away, then the run checks that the KV pages and
 * the JS heap are back at their idle level and the scheduler's invariants hold.
 *
 *   npm run soak:engine -- --seconds 600 [--model DIR] [--concurrency 24] [--pages 256]
 */
export interface SoakOptions {
  readonly seconds: number;
  readonly concurrency: number;
  /** Share of requests cut short (half by abort signal, half by the reader stopping). */
  readonly abortRate: number;
  readonly seed: number;
  /** Allowed growth of the JS heap, and of ArrayBuffer memory, over the warm baseline (MiB). */
  readonly heapSlackMiB: number;
  readonly log?: (line: string) => void;
}

export interface SoakReport {
  readonly ok: boolean;
  readonly failures: string[];
  readonly requests: number;
  /** Requests whose reader stopped iterating (no finish event reaches it). */
  readonly readerStopped: number;
  readonly finishCounts: Record<string, number>;
  readonly errors: number;
  readonly tokens: number;
  readonly numPreemptions: number;
  readonly prefixCacheHitTokens: number;
  readonly kvPagesUsedAfter: number;
  readonly heapBaselineMiB: number;
  readonly heapAfterMiB: number;
  readonly buffersBaselineMiB: number;
  readonly buffersAfterMiB: number;
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** `gc()` without --expose-gc: turning the flag on at run time exposes it to new contexts. */
function getGc(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
}

/** JS heap and ArrayBuffer memory (typed arrays, WASM memory) after full collections. */
function memoryMiB(gc: () => void): { heap: number; buffers: number } {
  for (let i = 0; i < 3; i++) gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed / 2 ** 20, buffers: m.arrayBuffers / 2 ** 20 };
}

/** Shared "system prompts" so prefix caching is exercised alongside unique prompts. */
function soakRequest(rng: Rng, id: string, vocab: number, maxLen: number): GenerateRequest {
  const systems = [0, 1, 2].map((s) => randomPrompt(1000 + s, 24, vocab)); // same every call
  const own = randomPrompt(Math.floor(rng.next() * 1e9), 1 + Math.floor(rng.next() * 40), vocab);
  const prompt = rng.next() < 0.6 ? [...systems[Math.floor(rng.next() * 3)]!, ...own] : own;
  const sampled = rng.next() < 0.5;
  return makeRequest(id, prompt.slice(0, maxLen - 1), {
    maxTokens: 1 + Math.floor(rng.next() * 48),
    ignoreEos: rng.next() < 0.3,
    logprobs: rng.next() < 0.2 ? 2 : null,
    returnRoutedExperts: rng.next() < 0.1,
    sampling: sampled
      ? { ...GREEDY, temperature: 0.8, topP: 0.9, seed: Math.floor(rng.next() * 1e6) }
      : GREEDY,
  });
}

interface Tally {
  requests: number;
  readerStopped: number;
  errors: number;
  tokens: number;
  finishCounts: Record<string, number>;
  failures: string[];
}

async function client(
  engine: LlmEngine,
  vocab: number,
  rng: Rng,
  deadline: number,
  t: Tally,
  o: SoakOptions,
) {
  for (let n = 0; Date.now() < deadline; n++) {
    const req = soakRequest(rng, `${rng.nextU32()}-${n}`, vocab, engine.maxModelLen);
    const cut = rng.next() < o.abortRate ? 1 + Math.floor(rng.next() * 8) : -1;
    const byReader = rng.next() < 0.5;
    const ctrl = new AbortController();
    let tokens = 0;
    t.requests++;
    for await (const ev of engine.generate(req, ctrl.signal)) {
      if (ev.type === 'error') t.errors++;
      if (ev.type === 'finish') {
        t.finishCounts[ev.reason] = (t.finishCounts[ev.reason] ?? 0) + 1;
        if (ev.completionTokens !== tokens)
          t.failures.push(`${req.id}: ${tokens} tokens, usage says ${ev.completionTokens}`);
      }
      if (ev.type !== 'token') continue;
      tokens++;
      t.tokens++;
      if (tokens === cut && byReader) {
        t.readerStopped++;
        break;
      }
      if (tokens === cut) ctrl.abort();
    }
  }
}

export async function runSoak(
  engine: LlmEngine,
  vocabSize: number,
  o: SoakOptions,
): Promise<SoakReport> {
  const gc = getGc();
  const rng = new Rng(o.seed);
  const t: Tally = {
    requests: 0,
    readerStopped: 0,
    errors: 0,
    tokens: 0,
    finishCounts: {},
    failures: [],
  };
  // Warm up first so the baseline includes JIT code, caches and pooled buffers.
  const warm = Date.now() + Math.min(2000, (o.seconds * 1000) / 10);
  await Promise.all(
    Array.from({ length: o.concurrency }, () => client(engine, vocabSize, rng, warm, t, o)),
  );
  await engine.whenIdle();
  const baseline = memoryMiB(gc);
  const deadline = Date.now() + o.seconds * 1000;
  const ticker = setInterval(() => {
    const s = engine.stats();
    o.log?.(
      `soak: ${t.requests} requests, ${t.tokens} tokens, running ${s.numRunning}, ` +
        `waiting ${s.numWaiting}, pages ${s.kvPagesUsed}/${s.kvPagesTotal}`,
    );
  }, 10_000);
  try {
    await Promise.all(
      Array.from({ length: o.concurrency }, () => client(engine, vocabSize, rng, deadline, t, o)),
    );
  } finally {
    clearInterval(ticker);
  }
  await engine.whenIdle();
  const after = memoryMiB(gc);
  const s = engine.stats();
  const failures = [...t.failures];
  if (s.kvPagesUsed !== 0) failures.push(`${s.kvPagesUsed} KV pages still used when idle`);
  if (s.numRunning + s.numWaiting !== 0)
    failures.push(`${s.numRunning} running, ${s.numWaiting} waiting when idle`);
  if (t.errors > 0) failures.push(`${t.errors} error events`);
  for (const k of ['heap', 'buffers'] as const) {
    if (after[k] > baseline[k] + o.heapSlackMiB) {
      failures.push(`${k} grew from ${baseline[k].toFixed(1)} to ${after[k].toFixed(1)} MiB`);
    }
  }
  try {
    engine.checkIntegrity();
  } catch (e) {
    failures.push((e as Error).message);
  }
  return {
    ok: failures.length === 0,
    failures,
    requests: t.requests,
    readerStopped: t.readerStopped,
    finishCounts: t.finishCounts,
    errors: t.errors,
    tokens: t.tokens,
    numPreemptions: s.numPreemptions ?? 0,
    prefixCacheHitTokens: s.prefixCacheHitTokens,
    kvPagesUsedAfter: s.kvPagesUsed,
    heapBaselineMiB: round2(baseline.heap),
    heapAfterMiB: round2(after.heap),
    buffersBaselineMiB: round2(baseline.buffers),
    buffersAfterMiB: round2(after.buffers),
  };
}

async function loadRunner(model: string | undefined, pages: number): Promise<ModelRunner> {
  if (!model)
    return new FakeModelRunner({ vocabSize: 512, numPages: pages, pageSize: 16, maxModelLen: 512 });
  const [{ CpuBackend }, { loadModel }, { M3ModelRunner }] = await Promise.all([
    import('../backend/cpu/cpu-backend.js'),
    import('../model/load-model.js'),
    import('../engine/m3-model-runner.js'),
  ]);
  return new M3ModelRunner(await loadModel(model, { backend: new CpuBackend() }), {
    numPages: pages,
    maxModelLen: 512,
  });
}

async function main(): Promise<number> {
  const { values: a } = parseArgs({
    options: {
      seconds: { type: 'string', default: '60' },
      concurrency: { type: 'string', default: '24' },
      'abort-rate': { type: 'string', default: '0.3' },
      seed: { type: 'string', default: '1' },
      pages: { type: 'string', default: '64' },
      model: { type: 'string' },
      'max-num-seqs': { type: 'string', default: '16' },
      'max-num-batched-tokens': { type: 'string', default: '256' },
    },
  });
  const runner = await loadRunner(a.model, Number(a.pages));
  const engine = new LlmEngine(new HostSamplingRunner(runner), {
    maxNumSeqs: Number(a['max-num-seqs']),
    maxNumBatchedTokens: Number(a['max-num-batched-tokens']),
    checkIntegrity: true,
  });
  const report = await runSoak(engine, runner.vocabSize, {
    seconds: Number(a.seconds),
    concurrency: Number(a.concurrency),
    abortRate: Number(a['abort-rate']),
    seed: Number(a.seed),
    heapSlackMiB: 16,
    log: (l) => console.error(l),
  });
  await engine.shutdown();
  console.log(JSON.stringify(report, null, 2));
  return report.ok ? 0 : 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    (rc) => (process.exitCode = rc),
    (e: unknown) => {
      console.error(e);
      process.exitCode = 2;
    },
  );
}
