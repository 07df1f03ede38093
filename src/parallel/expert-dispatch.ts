/**
 * Host-side bookkeeping of expert-parallel dispatch (DeepEP-style, one copy of a token per
 * destination rank): which of this rank's tokens go to which rank, and the rank-ordered
 * sum of what comes back. Pure functions over host arrays; the model does the exchange.
 */
export interface DispatchPlan {
  /** Rows sent to each rank: tokens with at least one expert that rank owns. */
  readonly sendRows: number[];
  /** Local token index of every send row, grouped by destination rank (ascending), tokens ascending. */
  readonly tokenOfRow: Int32Array;
}

/**
 * Plans the dispatch of `numTokens` tokens routed to `ids` [numTokens, width]: expert e lives
 * on rank ⌊e / expertsPerRank⌋. Ids outside [0, W·expertsPerRank) are an error.
 */
export function planDispatch(
  ids: Int32Array,
  width: number,
  numTokens: number,
  expertsPerRank: number,
  worldSize: number,
): DispatchPlan {
  const buckets: number[][] = Array.from({ length: worldSize }, () => []);
  const seen = new Int32Array(worldSize).fill(-1);
  for (let t = 0; t < numTokens; t++) {
    for (let j = 0; j < width; j++) {
      const e = ids[t * width + j]!;
      const q = Math.floor(e / expertsPerRank);
      if (!(q >= 0 && q < worldSize))
        throw new Error(`dispatch: expert ${e} has no owner among ${worldSize} ranks`);
      if (seen[q] === t) continue;
      seen[q] = t;
      buckets[q]!.push(t);
    }
  }
  return { sendRows: buckets.map((b) => b.length), tokenOfRow: Int32Array.from(buckets.flat()) };
}

/** out [numRows, rowSize] = the rows `tokenOfRow` of src [*, rowSize]. */
export function gatherRows<A extends Float32Array | Int32Array>(
  src: A,
  tokenOfRow: Int32Array,
  rowSize: number,
  make: (n: number) => A,
): A {
  const out = make(tokenOfRow.length * rowSize);
  tokenOfRow.forEach((t, k) => out.set(src.subarray(t * rowSize, (t + 1) * rowSize), k * rowSize));
  return out;
}

/**
 * out [numTokens, D] = Σ over the returned rows of each token, added in row order, which is
 * destination-rank order: 0 + y_rank_a + y_rank_b … with a < b (deterministic, float32).
 */
export function combineInRankOrder(
  back: Float32Array,
  tokenOfRow: Int32Array,
  numTokens: number,
  D: number,
): Float32Array {
  const out = new Float32Array(numTokens * D);
  tokenOfRow.forEach((t, k) => {
    for (let d = 0; d < D; d++) out[t * D + d] = out[t * D + d]! + back[k * D + d]!;
  });
  return out;
}
