import { loadavg } from 'node:os';
import type { Backend } from '../../backend/backend.js';
import type { ForwardBatch } from '../../backend/forward-batch.js';
import { loadModel } from '../../model/load-model.js';
import type { KvCache } from '../../model/minimax-m3/kv-cache.js';
import type { MiniMaxM3Model } from '../../model/minimax-m3/minimax-m3-model.js';
import { SeededRng } from '../../bench/seeded-rng.js';
import { orderNote, STEP_BLOCK, timeInterleaved, WARM_MS, type Block } from './interleave.js';
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
  /**
   * Other processes' share of all cores while the row ran (warm-up included), or null: the
   * same for every backend of a step, whose rows are timed interleaved.
   */
  readonly othersBusy: number | null;
  /** How the step's backends were timed against each other (interleave.ts). */
  readonly order: string;
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

export interface ModelBenchOptions {
  readonly prefillLens: readonly number[];
  /** (batch B, context) of each decode row. */
  readonly decode: readonly (readonly [number, number])[];
}

export interface BenchBackend {
  readonly label: string;
  readonly backend: Backend;
}

type Loaded = BenchBackend & { readonly model: MiniMaxM3Model };

interface StepSpec {
  readonly what: string;
  readonly pages: number;
  readonly pageSize: number;
  readonly tokensPerStep: number;
  readonly run: (m: MiniMaxM3Model, kv: KvCache, i: number) => Promise<unknown>;
  readonly warm: number;
  /** Timed steps: 6 and 30, in turns (block) whose count is a multiple of 2 and of 3 backends. */
  readonly reps: number;
  /** The turns the backends take (interleave.ts). */
  readonly block: Block;
  readonly randomCache: boolean;
}

/** One step on every backend, timed interleaved (interleave.ts): a row per backend. */
async function measureStep(models: readonly Loaded[], o: StepSpec): Promise<ModelRow[]> {
  const kvs = models.map(({ backend, model }) => {
    const kv = model.allocKv(o.pages, o.pageSize);
    if (o.randomCache) randomKv(backend, kv);
    return kv;
  });
  const share = startShare();
  const runs = kvs.map((kv, k) => (i: number) => o.run(models[k]!.model, kv, i));
  const timings = await timeInterleaved(runs, o.warm, o.reps, undefined, WARM_MS, o.block);
  const { othersBusy } = share(o.reps * models.length);
  const load = loadavg()[0]!;
  const order = orderNote(
    models.map((m) => m.label),
    o.block,
  );
  models.forEach(({ backend }, k) => freeKv(backend, kvs[k]!));
  return timings.map((t, k) => ({
    what: o.what,
    backend: models[k]!.label,
    tokS: (1000 * o.tokensPerStep) / t.ms,
    ms: t.ms,
    load,
    cpuMs: t.cpuMs,
    othersBusy,
    order,
  }));
}

/**
 * The bundled model on each backend, step by step, the backends' steps interleaved
 * (interleave.ts: timed one after another, whichever went first paid extra CPU time):
 * prefill of one prompt (logits of its last token), and decode steps of B sequences at a
 * given context. Decode contexts are filled with random K/V (no prefill needed: a decode
 * step's work does not depend on the cached values), and each sequence decodes its own token
 * so routing spreads over experts.
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
  for (const T of o.prefillLens)
    rows.push(...(await measureStep(models, prefill(T, S, tokens(T)))));
  for (const [B, ctx] of o.decode)
    rows.push(...(await measureStep(models, decode(B, ctx, S, tokens(B)))));
  return rows;
}

/** Prefill of one prompt of T tokens (logits of its last token). */
function prefill(T: number, S: number, ids: Int32Array): StepSpec {
  const pages = Math.ceil(T / S);
  return {
    what: `prefill ${T}`,
    pages,
    pageSize: S,
    tokensPerStep: T,
    run: (m, kv) => m.forward(step(1, 0, T, pages, S, ids), kv),
    warm: 1,
    reps: 6,
    block: STEP_BLOCK,
    randomCache: false,
  };
}

/**
 * Decode rows take turns of 5 timed steps after 2 untimed ones (6 turns each): a backend's
 * first step after another's reads its weights back into L3 (interleave.ts, Block).
 */
const DECODE_BLOCK: Block = { steps: 5, lead: 2 };

/** A decode step of B sequences at context ctx, over random K/V. */
function decode(B: number, ctx: number, S: number, ids: Int32Array): StepSpec {
  const reps = 30;
  const pagesPer = Math.ceil((ctx + reps + 1) / S);
  return {
    what: `decode B=${B} ctx ${ctx}`,
    pages: B * pagesPer,
    pageSize: S,
    tokensPerStep: B,
    // warm-up steps (i = -1) all decode at position ctx; timed step i at ctx + i
    run: (m, kv, i) => m.forward(step(B, ctx + Math.max(0, i), 1, pagesPer, S, ids), kv),
    warm: 8,
    reps,
    block: DECODE_BLOCK,
    randomCache: true,
  };
}

function freeKv(backend: Backend, kv: KvCache): void {
  for (const l of kv.layers) for (const t of [l.k, l.v, l.indexK]) if (t) backend.free(t);
}
