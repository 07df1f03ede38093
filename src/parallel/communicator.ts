import type { Tensor } from '../tensor/tensor.js';

/**
 * Collectives over one process group. Every rank calls the same collectives in the same
 * order with tensors of the same shape (the model calls them at named points only).
 * Sums are over ranks; `allGather`/`reduceScatter` work along the outermost dimension.
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
  /** In place: x ← x of `root`. */
  broadcast(x: Tensor, root: number): void | Promise<void>;
  barrier(): void | Promise<void>;
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
  broadcast(_x: Tensor, _root: number): void {}
  barrier(): void {}
}
