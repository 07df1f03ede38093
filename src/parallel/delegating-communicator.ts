import type { Tensor } from '../tensor/tensor.js';
import type { Communicator, Matmul } from './communicator.js';

/** A communicator the wrapper may close or abort (both optional: test groups have neither). */
export type InnerCommunicator = Communicator & { close?(): void; abort?(): void };

type FusedNorm = NonNullable<Communicator['allReduceAddRmsNorm']>;
type GemmRs = NonNullable<Communicator['matmulReduceScatter']>;

/**
 * Passes every collective to `inner` through `around` (the identity here): the one place a
 * wrapper (progress counting, timing, a test's hook) adds what it does around each call. The
 * optional fused ops are forwarded the same way where `inner` has them and the subclass does
 * not define its own; otherwise they are absent, as on `inner`, so callers still choose the
 * unfused path.
 */
export class DelegatingCommunicator implements Communicator {
  // `declare`: no field initialiser, so a subclass's own method is not shadowed.
  declare readonly allReduceAddRmsNorm?: FusedNorm;
  declare readonly matmulReduceScatter?: GemmRs;

  constructor(protected readonly inner: InnerCommunicator) {
    const self = this as { allReduceAddRmsNorm?: FusedNorm; matmulReduceScatter?: GemmRs };
    const fused = inner.allReduceAddRmsNorm?.bind(inner);
    if (fused && !('allReduceAddRmsNorm' in this))
      self.allReduceAddRmsNorm = (a: Tensor, r: Tensor, h: Tensor, w: Tensor, eps: number) =>
        this.around(() => fused(a, r, h, w, eps));
    const gemmRs = inner.matmulReduceScatter?.bind(inner);
    if (gemmRs && !('matmulReduceScatter' in this))
      self.matmulReduceScatter = (o: Tensor, all: Tensor, x: Tensor, w: Tensor, mm: Matmul) =>
        this.around(() => gemmRs(o, all, x, w, mm));
  }

  /** What a wrapper does around one collective; `call` runs it on `inner`. */
  protected around(call: () => void | Promise<void>): void | Promise<void> {
    return call();
  }

  get rank(): number {
    return this.inner.rank;
  }

  get worldSize(): number {
    return this.inner.worldSize;
  }

  allReduce(x: Tensor): void | Promise<void> {
    return this.around(() => this.inner.allReduce(x));
  }

  allGather(out: Tensor, x: Tensor): void | Promise<void> {
    return this.around(() => this.inner.allGather(out, x));
  }

  reduceScatter(out: Tensor, x: Tensor): void | Promise<void> {
    return this.around(() => this.inner.reduceScatter(out, x));
  }

  allToAll(
    out: Tensor,
    x: Tensor,
    s: readonly number[],
    r: readonly number[],
  ): void | Promise<void> {
    return this.around(() => this.inner.allToAll(out, x, s, r));
  }

  broadcast(x: Tensor, root: number): void | Promise<void> {
    return this.around(() => this.inner.broadcast(x, root));
  }

  barrier(): void | Promise<void> {
    return this.around(() => this.inner.barrier());
  }

  close(): void {
    this.inner.close?.();
  }

  abort(): void {
    this.inner.abort?.();
  }
}
