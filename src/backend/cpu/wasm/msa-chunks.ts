import type { MsaOptions } from '../../backend.js';
import type { HeapScratch } from './step-tables.js';

type Row = [string, ...number[]];

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

/**
 * The pool jobs of one MSA selection cut into about `n` chunks (run in order). Many tokens:
 * one job, units = tokens (msa_select scores and picks each). Fewer tokens than chunks with
 * more blocks than topk (decode): msa_scores over (token, 16-block range) units on every
 * thread into `scores`, then one msa_pick on the caller. `scratch`: one per chunk.
 */
export function msaJobs(
  j: MsaJob,
  n: number,
  scratch: readonly HeapScratch[],
  scores: HeapScratch,
): Row[][] {
  const { T, S, o } = j;
  const { numIndexHeads: Hi, indexDim: Di, topk } = o;
  const maxBlocks = Math.floor(j.maxPos / S) + 1;
  const sfx = j.kv16 ? '_kv16' : '';
  if (T < n && maxBlocks > topk) {
    const parts = Math.ceil(maxBlocks / PART_BLOCKS);
    const units = T * parts;
    const m = Math.min(units, n);
    const sc = scores.f32(T * Hi * maxBlocks).byteOffset;
    const rows: Row[] = [];
    for (let i = 0; i < m; i++) {
      // prettier-ignore
      rows.push([`msa_scores${sfx}`, j.q, j.k, j.meta, T, i, units, m, S, Hi, Di, topk, parts, PART_BLOCKS,
        maxBlocks, sc, scratch[i]!.f32(8).byteOffset]);
    }
    const taken = scratch[0]!.f32(maxBlocks).byteOffset;
    // prettier-ignore
    return [rows, [['msa_pick', j.out, j.meta, sc, T, 0, T, 1, S, Hi, topk, o.initBlocks, o.localBlocks,
      maxBlocks, taken]]];
  }
  const m = Math.min(T, n); // units = tokens: a token's index heads share one pass over its keys
  const rows: Row[] = [];
  for (let i = 0; i < m; i++) {
    // Hi heads' scores, then taken (bytes), then 32 bytes for $dot4x2's sums
    const s = scratch[i]!.f32((Hi + 1) * maxBlocks + 12).byteOffset;
    const taken = s + 4 * Hi * maxBlocks;
    // prettier-ignore
    rows.push([`msa_select${sfx}`, j.q, j.k, j.meta, j.out, T, i, T, m, S, Hi, Di, topk, o.initBlocks,
      o.localBlocks, s, taken, taken + 4 * maxBlocks + 16]);
  }
  return [rows];
}
