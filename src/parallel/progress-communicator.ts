import type { Tensor } from '../tensor/tensor.js';
import type { Communicator, Matmul } from './communicator.js';

type Closable = Communicator & { close(): void; abort?(): void };

/**
 * Passes every collective to `inner` after calling `entered()`: the rank's count of
 * collectives entered, which its hang watchdog publishes so that a launcher can tell the
 * rank that stopped (fewest entered) from the peers waiting for it in the next collective.
 * The optional fused ops are forwarded where `inner` has them (absent otherwise, as there).
 */
export class ProgressCommunicator implements Communicator {
  readonly allReduceAddRmsNorm?: (
    a: Tensor,
    r: Tensor,
    h: Tensor,
    w: Tensor,
    eps: number,
  ) => void | Promise<void>;
  readonly matmulReduceScatter?: (
    out: Tensor,
    all: Tensor,
    x: Tensor,
    w: Tensor,
    matmul: Matmul,
  ) => void | Promise<void>;

  constructor(
    private readonly inner: Closable,
    private readonly entered: () => void,
  ) {
    const fused = inner.allReduceAddRmsNorm?.bind(inner);
    if (fused) this.allReduceAddRmsNorm = (a, r, h, w, eps) => (entered(), fused(a, r, h, w, eps));
    const gemmRs = inner.matmulReduceScatter?.bind(inner);
    if (gemmRs)
      this.matmulReduceScatter = (o, all, x, w, mm) => (entered(), gemmRs(o, all, x, w, mm));
  }

  get rank(): number {
    return this.inner.rank;
  }

  get worldSize(): number {
    return this.inner.worldSize;
  }

  allReduce(x: Tensor): void | Promise<void> {
    this.entered();
    return this.inner.allReduce(x);
  }

  allGather(out: Tensor, x: Tensor): void | Promise<void> {
    this.entered();
    return this.inner.allGather(out, x);
  }

  reduceScatter(out: Tensor, x: Tensor): void | Promise<void> {
    this.entered();
    return this.inner.reduceScatter(out, x);
  }

  allToAll(
    out: Tensor,
    x: Tensor,
    s: readonly number[],
    r: readonly number[],
  ): void | Promise<void> {
    this.entered();
    return this.inner.allToAll(out, x, s, r);
  }

  broadcast(x: Tensor, root: number): void | Promise<void> {
    this.entered();
    return this.inner.broadcast(x, root);
  }

  barrier(): void | Promise<void> {
    this.entered();
    return this.inner.barrier();
  }

  close(): void {
    this.inner.close();
  }

  abort(): void {
    this.inner.abort?.();
  }
}
