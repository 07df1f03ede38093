import { chunkRange } from '../comm-stats.js';

/**
 * Which all-reduce a size gets, and how the two-shot one cuts the tensor. Both give the same
 * bits (every element summed in float32 in rank order 0..W−1, rounded once); they differ in
 * traffic: one-shot reads every peer's whole input (W−1 · n per rank, one barrier fewer),
 * two-shot reduces a 1/W slice then gathers the slices (2(W−1)/W · n per rank).
 */
export type AllReduceAlgorithm = 'one-shot' | 'two-shot';

/**
 * Inputs up to this size take the one-shot kernel. 512 KiB is where vLLM's custom all-reduce
 * switches on 2–8 NVLink GPUs (below it the second barrier costs more than the extra bytes);
 * on one GPU both are HBM-bound, so bench:comm measures both and this stays until multi-GPU
 * numbers say otherwise. Overridable per communicator (`oneShotMaxBytes`), e.g. by tests.
 */
export const ONE_SHOT_MAX_BYTES = 512 * 1024;

export function chooseAllReduce(
  bytes: number,
  oneShotMaxBytes = ONE_SHOT_MAX_BYTES,
): AllReduceAlgorithm {
  return bytes <= oneShotMaxBytes ? 'one-shot' : 'two-shot';
}

/** Elements per 16-byte pack: 8 bf16 or 4 f32. */
export function packWidth(elemBytes: number): number {
  return 16 / elemBytes;
}

/** Rank q's slice of the two-shot all-reduce, in elements [start, end). */
export interface Slice {
  readonly start: number;
  readonly end: number;
}

/**
 * The two-shot slices of n elements, as kernels/allreduce.cu cuts them: P = floor(n / V)
 * packs of V elements cut into W near-equal runs of whole packs (chunkRange), and the last
 * n − P·V elements (fewer than one pack) appended to the last rank's slice. The slices cover
 * [0, n) once, in order.
 */
export function twoShotSlices(n: number, W: number, V: number): Slice[] {
  const P = Math.floor(n / V);
  return Array.from({ length: W }, (_, q) => {
    const [a, b] = chunkRange(P, W, q);
    return { start: a * V, end: q === W - 1 ? n : b * V };
  });
}
