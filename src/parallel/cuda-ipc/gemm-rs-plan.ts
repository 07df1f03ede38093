/**
 * How a GEMM + reduce-scatter (seed 001) splits a row-parallel projection under SP. The full
 * partial output all [W·n, N] is cut into the W destination blocks [d·n, (d+1)·n) — block d is
 * what rank d's reduce-scatter sums — and each block's GEMM is one chunk. Rank r computes the
 * blocks in the order r+1, r+2, …, r (mod W): every peer's block first, each pushed to its
 * owner while the next block's GEMM runs, its own block last (read in place, never copied). At
 * every step the W ranks push to W different ranks, so no link carries two pushes at once.
 * The owner then sums the W blocks in rank order 0..W−1: reduce-scatter's definition.
 */

/**
 * Below this many rows (W·n) the projection runs as GEMM then reduce-scatter: the chunk
 * GEMMs are too small to fill the GPU and the overlap does not pay for the extra launches.
 * Measured (bench:comm, one H200, 2 ranks as streams, docs/benchmarks/comm.md): GEMM-RS is
 * 0.81–0.84x of GEMM then reduce-scatter at M = 512–768 and 1.01–1.10x from M = 1024 on, for
 * o_proj and down_proj alike; vLLM switches at the same M on 4 GB300s.
 */
export const GEMM_RS_MIN_ROWS = 1024;

/** One chunk: GEMM rows [start, start + rows) of x into block `dest` of `all`. */
export interface GemmRsChunk {
  /** The rank whose reduce-scatter output this block is. */
  readonly dest: number;
  /** First row of the block in `all` (and of x): dest·n. */
  readonly start: number;
  /** Real rows of the block (x has M rows; rows past M are SP padding, not computed). */
  readonly rows: number;
}

/** Rank `rank`'s chunks in the order it computes them (its own block last). */
export function gemmRsChunks(M: number, n: number, W: number, rank: number): GemmRsChunk[] {
  if (!(Number.isInteger(n) && n >= 1 && M >= 0 && M <= W * n))
    throw new Error(`GEMM + reduce-scatter: ${M} rows do not fit ${W} blocks of ${n}`);
  return Array.from({ length: W }, (_, s) => {
    const dest = (rank + 1 + s) % W;
    const start = dest * n;
    return { dest, start, rows: Math.max(0, Math.min(n, M - start)) };
  });
}

/**
 * Rows of the smallest non-empty block of M rows cut into W blocks of n (0 when M is 0): the
 * blocked path needs `matmul` row-invariant down to it.
 */
export function smallestGemmRsBlock(M: number, n: number, W: number): number {
  const rows = gemmRsChunks(M, n, W, 0)
    .map((c) => c.rows)
    .filter((r) => r > 0);
  return rows.length ? Math.min(...rows) : 0;
}
