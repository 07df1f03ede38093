import { loadavg } from 'node:os';
import type { Backend } from '../../backend/backend.js';
import type { ForwardBatch } from '../../backend/forward-batch.js';
import { loadModel } from '../../model/load-model.js';
import type { KvCache } from '../../model/minimax-m3/kv-cache.js';
import type { MiniMaxM3Model } from '../../model/minimax-m3/minimax-m3-model.js';
import { SeededRng } from '../../bench/seeded-rng.js';
import { startShare } from './machine-share.js';

export interface ModelRow {
  readonly what: string;
  readonly backend: string;
  readonly tokS: number;
  /** Median step time. */
  readonly ms: number;
  /** 1-minute load average when the row was measured. */
  readonly load: number;
  /** This process's CPU ms per timed step (worker threads included: their spinning too). */
  readonly cpuMs: number;
  /** Other processes' share of all cores while the row ran (warm-up included), or null. */
  readonly othersBusy: number | null;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** One step of B sequences; sequence s owns pages [s·pagesPer, (s+1)·pagesPer). */
function step(
  B: number,
  numCached: number,
  numNew: number,
  pagesPer: number,
  S: number,
  ids: Int32Array,
): ForwardBatch {
  return {
    tokenIds: ids,
    seqs: Array.from({ length: B }, (_, s) => ({
      numCached,
      numNew,
      pageTable: Int32Array.from({ length: pagesPer }, (_, i) => s * pagesPer + i),
    })),
    pageSize: S,
    logitsFor: 'last',
  };
}

/** Fills every cache tensor with random values (what a prefill would leave, statistically). */
function randomKv(backend: Backend, kv: KvCache): void {
  const rng = new SeededRng(7);
  for (const l of kv.layers) {
    for (const t of [l.k, l.v, l.indexK]) {
      if (!t) continue;
      const n = t.shape.reduce((a, b) => a * b, 1);
      backend.write(
        t,
        Float32Array.from({ length: n }, () => 2 * rng.next() - 1),
      );
    }
  }
}

/**
 * Untimed warm-up of each row: at least `warm` steps and this long. V8 keeps compiling the
 * forward's JS (tiering up, re-optimising after deopts) for the first few hundred decode
 * steps: measured here, B=1 steps took 0.86 → 0.47 → 0.35 ms over the first 100 / 200 /
 * 400 steps, so a fixed 8 warm-up steps timed the compiler, not the kernels.
 */
const WARM_MS = 500;

/**
 * Steady-state timings of the model: warm-up steps (`run(-1)`: at least `warm` and WARM_MS),
 * then the median of `reps` timed steps `run(0..reps-1)` (each step timed alone, so
 * preemption by other work on a shared machine only hits the steps it lands on).
 */
async function timeSteps(
  run: (i: number) => Promise<unknown>,
  warm: number,
  reps: number,
): Promise<{ ms: number; cpuMs: number; othersBusy: number | null }> {
  const whole = startShare();
  const w0 = performance.now();
  for (let i = 0; i < warm || performance.now() - w0 < WARM_MS; i++) await run(-1);
  const timed = startShare();
  const ts: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await run(i);
    ts.push(performance.now() - t0);
  }
  const { cpuMsPerStep } = timed(reps);
  return { ms: median(ts), cpuMs: cpuMsPerStep, othersBusy: whole(reps).othersBusy };
}

export interface ModelBenchOptions {
  readonly prefillLens: readonly number[];
  /** (batch B, context) of each decode row. */
  readonly decode: readonly (readonly [number, number])[];
}

export interface BenchBackend {
  readonly label: string;
  readonly backend: Backend;
}

/**
 * The bundled model on each backend, row by row (each row runs on every backend before the
 * next row, so a comparison sees the same machine load): prefill of one prompt (logits of
 * its last token), and decode steps of B sequences at a given context. Decode contexts are
 * filled with random K/V (no prefill needed: a decode step's work does not depend on the
 * cached values), and each sequence decodes its own token so routing spreads over experts.
 */
export async function benchModel(
  dir: string,
  backends: readonly BenchBackend[],
  o: ModelBenchOptions,
): Promise<ModelRow[]> {
  const models = await Promise.all(
    backends.map(async (b) => ({ ...b, model: await loadModel(dir, { backend: b.backend }) })),
  );
  const cfg = models[0]!.model.cfg;
  const S = cfg.sparse?.blockSize ?? 16;
  const rng = new SeededRng(3);
  const tokens = (n: number): Int32Array =>
    Int32Array.from({ length: n }, () => rng.int(3, cfg.vocabSize - 1));
  const rows: ModelRow[] = [];
  const measure = async (
    what: string,
    pages: number,
    tokensPerStep: number,
    run: (m: MiniMaxM3Model, kv: KvCache, i: number) => Promise<unknown>,
    warm: number,
    reps: number,
    randomCache: boolean,
  ): Promise<void> => {
    for (const { label, backend, model } of models) {
      const kv = model.allocKv(pages, S);
      if (randomCache) randomKv(backend, kv);
      const t = await timeSteps((i) => run(model, kv, i), warm, reps);
      rows.push({
        what,
        backend: label,
        tokS: (1000 * tokensPerStep) / t.ms,
        ms: t.ms,
        load: loadavg()[0]!,
        cpuMs: t.cpuMs,
        othersBusy: t.othersBusy,
      });
      freeKv(backend, kv);
    }
  };
  for (const T of o.prefillLens) {
    const pages = Math.ceil(T / S);
    const ids = tokens(T);
    await measure(
      `prefill ${T}`,
      pages,
      T,
      (m, kv) => m.forward(step(1, 0, T, pages, S, ids), kv),
      1,
      5,
      false,
    );
  }
  const reps = 30;
  for (const [B, ctx] of o.decode) {
    const pagesPer = Math.ceil((ctx + reps + 1) / S);
    const ids = tokens(B);
    // warm-up steps (i = -1) all decode at position ctx; timed step i at ctx + i
    // prettier-ignore
    await measure(`decode B=${B} ctx ${ctx}`, B * pagesPer, B,
      (m, kv, i) => m.forward(step(B, ctx + Math.max(0, i), 1, pagesPer, S, ids), kv), 8, reps, true);
  }
  return rows;
}

function freeKv(backend: Backend, kv: KvCache): void {
  for (const l of kv.layers) for (const t of [l.k, l.v, l.indexK]) if (t) backend.free(t);
}
