import { DelegatingCommunicator, type InnerCommunicator } from './delegating-communicator.js';

/**
 * Wraps a communicator to measure the time spent in collectives: the device is synchronised
 * before each call (so queued compute is not counted) and after it. The extra syncs change
 * the overlap of a real run, so benchmarks time steps without it and use it in a separate
 * pass for the communication share.
 */
export class TimedCommunicator extends DelegatingCommunicator {
  /** Wall time inside collectives since the last `reset` (while enabled). */
  totalMs = 0;
  calls = 0;
  /** Off: calls pass straight through, with no syncs. */
  enabled = false;

  constructor(
    inner: InnerCommunicator,
    private readonly sync: () => void,
  ) {
    super(inner);
  }

  reset(): void {
    this.totalMs = 0;
    this.calls = 0;
  }

  protected override async around(fn: () => void | Promise<void>): Promise<void> {
    if (!this.enabled) return fn();
    this.sync();
    const start = performance.now();
    await fn();
    this.sync();
    this.totalMs += performance.now() - start;
    this.calls++;
  }
}
