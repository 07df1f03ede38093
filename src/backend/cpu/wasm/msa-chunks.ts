import type { MsaOptions } from '../../backend.js';
import type { JobRows } from './job-rows.js';
import { KERNEL } from './kernel-instances.js';
import type { HeapScratch } from './step-tables.js';

/**
 * Blocks per unit when a selection is split by key ranges. Fixed, so the split never depends
 * on the thread count (and a block's score never depends on the split).
 */
const PART_BLOCKS = 16;

/** One MSA selection's operands, as byte offsets into the heap. */
export interface MsaJob {
  readonly out: number;
  readonly q: number;
  readonly k: number;
  /** The step's token table (StepTables.metaPtr). */
  readonly meta: number;
  readonly T: number;
  readonly S: number;
  /** Largest position of the step's tokens. */
  readonly maxPos: number;
  readonly o: MsaOptions;
  /** Whether `k` holds bf16 index keys (the _kv16 kernels). */
  readonly kv16: boolean;
}

/** What a split selection's msa_pick reads: the scores msa_scores wrote, and their blocks. */
export interface MsaScores {
  readonly scores: number;
  readonly maxBlocks: number;
}

/**
 * The first pool job of one MSA selection cut into about `n` chunks, added to `job`; where a
 * second one (msaPick) must follow it, the scores it picks from. Many tokens: units = tokens
 * (msa_select scores and picks each). Fewer tokens than chunks with more blocks than topk
 * (decode): msa_scores over (token, 16-block range) units on every thread into `scores`, then
 * msaPick's one msa_pick. `scratch`: one per chunk.
 */
export function msaJob(
  job: JobRows,
  j: MsaJob,
  n: number,
  scratch: readonly HeapScratch[],
  scores: HeapScratch,
): MsaScores | null {
  const { T, S, o } = j;
  const { numIndexHeads: Hi, indexDim: Di, topk } = o;
  const maxBlocks = Math.floor(j.maxPos / S) + 1;
  if (T < n && maxBlocks > topk) {
    const parts = Math.ceil(maxBlocks / PART_BLOCKS);
    const units = T * parts;
    const m = Math.min(units, n);
    const sc = scores.f32(T * Hi * maxBlocks).byteOffset;
    const fn = j.kv16 ? KERNEL.msa_scores_kv16 : KERNEL.msa_scores;
    for (let i = 0; i < m; i++) {
      // prettier-ignore
      job.add(fn, j.q, j.k, j.meta, T, i, units, m, S, Hi, Di, topk, parts, PART_BLOCKS,
        maxBlocks, sc, scratch[i]!.f32(8).byteOffset);
    }
    return { scores: sc, maxBlocks };
  }
  const m = Math.min(T, n); // units = tokens: a token's index heads share one pass over its keys
  const fn = j.kv16 ? KERNEL.msa_select_kv16 : KERNEL.msa_select;
  for (let i = 0; i < m; i++) {
    // Hi heads' scores, then taken (bytes), then 32 bytes where $quads2 writes its sums
    const s = scratch[i]!.f32((Hi + 1) * maxBlocks + 12).byteOffset;
    const taken = s + 4 * Hi * maxBlocks;
    // prettier-ignore
    job.add(fn, j.q, j.k, j.meta, j.out, T, i, T, m, S, Hi, Di, topk, o.initBlocks,
      o.localBlocks, s, taken, taken + 4 * maxBlocks + 16);
  }
  return null;
}

/** The job after a split msaJob: one msa_pick of every token from `s`, added to `job`. */
export function msaPick(
  job: JobRows,
  j: MsaJob,
  s: MsaScores,
  scratch: readonly HeapScratch[],
): void {
  const { T, S, o } = j;
  const taken = scratch[0]!.f32(s.maxBlocks).byteOffset;
  // prettier-ignore
  job.add(KERNEL.msa_pick, j.out, j.meta, s.scores, T, 0, T, 1, S, o.numIndexHeads, o.topk,
    o.initBlocks, o.localBlocks, s.maxBlocks, taken);
}
