import type { BatchLayout, ForwardBatch } from '../../forward-batch.js';
import type { PagedAttentionArgs } from '../ops/attention.js';
import type { JobRows } from './job-rows.js';
import { KERNEL } from './kernel-instances.js';
import type { HeapScratch, StepTables } from './step-tables.js';

/**
 * Flops a byte of KV (or index key) cache rows counts for in the work of attention and MSA
 * selection, whose time goes to reading those rows, not to their few flops per byte: measured
 * at decode B=32 ctx 256, a sparse layer's attention (2.1 MFLOP, 2.1 MB of K and V rows) and
 * MSA selection (2.1 MFLOP, 2.1 MB of index keys) each took ~350 µs on one thread, what
 * ~17 MFLOP of matmul take, yet by their flops they stayed under the then 4 MFLOP wake
 * threshold, on the caller alone. 4, not the measured ~8: at B=1 ctx 256 a layer's attention
 * (0.3 MB of rows, ~4 µs) then counts as ~0.3 MFLOP, near MIN_WAKE_FLOPS, not far above it.
 */
export const FLOPS_PER_CACHE_BYTE = 4;

/** Bytes of the cache that the step's sequences hold, `rowBytes` per position. */
function cacheBytes(batch: ForwardBatch, rowBytes: number): number {
  let n = 0;
  for (const s of batch.seqs) n += s.numCached + s.numNew;
  return n * rowBytes;
}

/** Where and how one attention call's units run (CpuKernels.attention). */
export interface AttentionSetup {
  /** The step's token tables, filled for this batch. */
  readonly tables: StepTables;
  /** One scratch block per chunk. */
  readonly scratch: readonly HeapScratch[];
  /** Chunks a job of this much work is cut into (CpuKernels.chunksFor). */
  readonly chunksFor: (work: number) => number;
  /** attentionTouchMinBytes (CpuKernelsOptions). */
  readonly touchMinBytes: number;
  /** Half-width K and V copies to read instead of a.k and a.v (attention_kv16), or null. */
  readonly kv16: { readonly k: Uint16Array; readonly v: Uint16Array } | null;
}

/**
 * The pool job of one paged attention call: its chunks (attention.wat `attention` rows) added
 * to `job`; returns its work, flops plus FLOPS_PER_CACHE_BYTE for each byte of K and V rows read.
 */
export function attentionJob(
  job: JobRows,
  a: PagedAttentionArgs,
  batch: ForwardBatch,
  layout: BatchLayout,
  s: AttentionSetup,
): number {
  const S = batch.pageSize;
  const T = layout.numTokens;
  const maxPos = s.tables.maxPos;
  const maxBlocks = a.blocks ? a.topk : Math.floor(maxPos / S) + 1;
  const maxKeys = a.blocks ? a.topk * S : maxPos + 1;
  const blistLen = (maxBlocks + 1 + 3) & ~3; // + the touch result (attention.wat)
  const keysLen = (maxKeys + 8 + 3) & ~3;
  const cache = FLOPS_PER_CACHE_BYTE * 8 * a.headDim * a.numKvHeads * T * maxKeys;
  const work = 4 * a.headDim * a.numHeads * T * maxKeys + cache;
  const chunks = s.chunksFor(work);
  // Dense with tokens enough for every chunk: a unit takes all KV groups of its token (one
  // pass touches whole cache rows), else one (token, group).
  const gpu = a.blocks === null && a.numKvHeads > 1 && T >= chunks ? a.numKvHeads : 1;
  const units = (T * a.numKvHeads) / gpu;
  const n = Math.min(units, chunks);
  const kvBytes = s.kv16 ? 4 : 8; // K and V bytes per cached element
  // Dense units of one KV group (a few tokens over long contexts) read without touching: at
  // B=1-2 ctx 4,000 their rows come from L3 (the dense layer's 4-8 MB each step) and the touch
  // pass only added loads (session 16b: 3-8% a step); sparse units and whole-row dense units
  // (many tokens: rows from DRAM) still touch.
  const wide = a.blocks !== null || gpu > 1;
  const touch =
    wide && cacheBytes(batch, kvBytes * a.numKvHeads * a.headDim) >= s.touchMinBytes ? 1 : 0;
  const [fn, k, v] = s.kv16
    ? [KERNEL.attention_kv16, s.kv16.k.byteOffset, s.kv16.v.byteOffset]
    : [KERNEL.attention, a.k.byteOffset, a.v.byteOffset];
  for (let i = 0; i < n; i++) {
    const sc = s.scratch[i]!.f32(blistLen + 2 * keysLen); // blist, then two heads' scores
    const sp = sc.byteOffset + blistLen * 4;
    // prettier-ignore
    job.add(fn, a.out.byteOffset, a.q.byteOffset, k, v,
      s.tables.metaPtr, a.blocks ? a.blocks.byteOffset : 0, T, i, units, n,
      a.numHeads, a.numKvHeads, a.headDim, S, a.topk, a.scale, sc.byteOffset, sp, sp + keysLen * 4, gpu, touch);
  }
  return work;
}
