import type { Tensor } from '../tensor/tensor.js';
import type { Communicator, Matmul } from './communicator.js';

/**
 * Wraps a communicator to measure the time spent in collectives: the device is synchronised
 * before each call (so queued compute is not counted) and after it. The extra syncs change
 * the overlap of a real run, so benchmarks time steps without it and use it in a separate
 * pass for the communication share.
 */
export class TimedCommunicator implements Communicator {
  /** Wall time inside collectives since the last `reset` (while enabled). */
  totalMs = 0;
  calls = 0;
  /** Off: calls pass straight through, with no syncs. */
  enabled = false;
  /** The inner communicator's fused ops, timed, where it has them (else absent, as there). */
  readonly allReduceAddRmsNorm?: (
    a: Tensor,
    r: Tensor,
    h: Tensor,
    w: Tensor,
    eps: number,
  ) => Promise<void>;
  readonly matmulReduceScatter?: (
    out: Tensor,
    all: Tensor,
    x: Tensor,
    w: Tensor,
    matmul: Matmul,
  ) => Promise<void>;

  constructor(
    private readonly inner: Communicator & { close(): void; abort?(): void },
    private readonly sync: () => void,
  ) {
    const fused = inner.allReduceAddRmsNorm?.bind(inner);
    if (fused)
      this.allReduceAddRmsNorm = (a, r, h, w, eps) => this.time(() => fused(a, r, h, w, eps));
    const gemmRs = inner.matmulReduceScatter?.bind(inner);
    if (gemmRs)
      this.matmulReduceScatter = (o, all, x, w, mm) => this.time(() => gemmRs(o, all, x, w, mm));
  }

  get rank(): number {
    return this.inner.rank;
  }

  get worldSize(): number {
    return this.inner.worldSize;
  }

  allReduce(x: Tensor): Promise<void> {
    return this.time(() => this.inner.allReduce(x));
  }

  allGather(out: Tensor, x: Tensor): Promise<void> {
    return this.time(() => this.inner.allGather(out, x));
  }

  reduceScatter(out: Tensor, x: Tensor): Promise<void> {
    return this.time(() => this.inner.reduceScatter(out, x));
  }

  allToAll(out: Tensor, x: Tensor, s: readonly number[], r: readonly number[]): Promise<void> {
    return this.time(() => this.inner.allToAll(out, x, s, r));
  }

  broadcast(x: Tensor, root: number): Promise<void> {
    return this.time(() => this.inner.broadcast(x, root));
  }

  barrier(): Promise<void> {
    return this.time(() => this.inner.barrier());
  }

  reset(): void {
    this.totalMs = 0;
    this.calls = 0;
  }

  close(): void {
    this.inner.close();
  }

  abort(): void {
    this.inner.abort?.();
  }

  private async time(fn: () => void | Promise<void>): Promise<void> {
    if (!this.enabled) return fn();
    this.sync();
    const start = performance.now();
    await fn();
    this.sync();
    this.totalMs += performance.now() - start;
    this.calls++;
  }
}
