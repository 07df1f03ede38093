import type { Tensor } from '../tensor/tensor.js';

/** out [M, N] = x [M, K] · w [N, K]ᵀ on this rank's device (`Backend.matmul`). */
export type Matmul = (out: Tensor, x: Tensor, w: Tensor) => void;

/**
 * Collectives over one process group. Every rank calls the same collectives in the same
 * order with tensors of the same shape (the model calls them at named points only).
 * Sums are over ranks in a fixed order (rank 0 first), so every rank ends with the same
 * bits; `allGather`/`reduceScatter`/`allToAll` work along the outermost dimension.
 */
export interface Communicator {
  readonly rank: number;
  readonly worldSize: number;
  /** In place: x ← Σ_ranks x. */
  allReduce(x: Tensor): void | Promise<void>;
  /** out [W·n, ...] = concat over ranks of x [n, ...]. */
  allGather(out: Tensor, x: Tensor): void | Promise<void>;
  /** out [n, ...] = rows [rank·n, (rank+1)·n) of Σ_ranks x [W·n, ...]. */
  reduceScatter(out: Tensor, x: Tensor): void | Promise<void>;
  /**
   * Personalised exchange of rows: x [Σ sendRows, ...] holds, rank by rank, the rows this rank
   * sends to rank q (`sendRows[q]` of them); out [Σ recvRows, ...] receives, rank by rank, the
   * rows rank q sent here. `recvRows[q]` must equal what rank q passes as its `sendRows[rank]`.
   */
  allToAll(
    out: Tensor,
    x: Tensor,
    sendRows: readonly number[],
    recvRows: readonly number[],
  ): void | Promise<void>;
  /** In place: x ← x of `root`. */
  broadcast(x: Tensor, root: number): void | Promise<void>;
  barrier(): void | Promise<void>;
  /**
   * Optional, seed 000's fused FFN reduction in one step: r ← r + Σ_ranks h (the sum stored
   * in h's dtype, as `allReduce` would leave it), a ← GemmaRMSNorm(r; w). A communicator that
   * has it gives bit for bit what `allReduce(h)` then `Backend.addRmsNorm(a, r, h, w, eps)`
   * give, except that h is left as it was (the CUDA IPC communicator's fused kernel).
   */
  allReduceAddRmsNorm?(
    a: Tensor,
    r: Tensor,
    h: Tensor,
    w: Tensor,
    eps: number,
  ): void | Promise<void>;
  /**
   * Optional, seed 001's GEMM + reduce-scatter of a row-parallel projection under SP:
   * all [W·n, N] is the projection's full partial output, whose first M rows it writes with
   * `matmul(·, x, w)` (x [M, K], M ≤ W·n; the other rows are left as they are), and
   * out [n, N] = rows [rank·n, (rank+1)·n) of Σ_ranks all. Bit for bit `matmul(rows(all, 0, M),
   * x, w)` then `reduceScatter(out, all)`. The CUDA IPC communicator splits the GEMM by row
   * blocks, so it needs a `matmul` whose rows do not depend on how many rows one call takes:
   * `rowInvariantFrom` is the least row count from which that holds for this `w` (the CUDA
   * backend's decode kernels split K by the row count below it: `Backend.matmulRowInvariantFrom`),
   * and the blocks are used only when every non-empty one has at least that many rows.
   */
  matmulReduceScatter?(
    out: Tensor,
    all: Tensor,
    x: Tensor,
    w: Tensor,
    matmul: Matmul,
    rowInvariantFrom?: number,
  ): void | Promise<void>;
}

/** World size 1: every collective is the identity. */
export class SingleRankCommunicator implements Communicator {
  readonly rank = 0;
  readonly worldSize = 1;
  allReduce(_x: Tensor): void {}
  allGather(_out: Tensor, _x: Tensor): void {
    throw new Error('allGather on a single rank: the caller should use x directly');
  }
  reduceScatter(_out: Tensor, _x: Tensor): void {
    throw new Error('reduceScatter on a single rank: the caller should use x directly');
  }
  allToAll(_out: Tensor, _x: Tensor, _s: readonly number[], _r: readonly number[]): void {
    throw new Error('allToAll on a single rank: the caller should use x directly');
  }
  broadcast(_x: Tensor, _root: number): void {}
  barrier(): void {}
}
