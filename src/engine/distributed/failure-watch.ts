/**
 * The first failure of any rank, as seen from rank 0 (or a node supervisor). Several signs of
 * one failure arrive in some order — the rank's own "failed" status with its error, its
 * process exit, the loss of its connections — so each report has a weight and `explain`
 * waits briefly for the most telling one before naming the rank and the error.
 */
import { PeerLostError } from '../../parallel/transport/framed-socket.js';

export type FailureSource = 'status' | 'exit' | 'connection';

const WEIGHT: Record<FailureSource, number> = { status: 3, exit: 2, connection: 1 };

export class RankFailure extends Error {
  override name = 'RankFailure';
  constructor(
    readonly rank: number,
    readonly detail: string,
  ) {
    super(`rank ${rank} failed: ${detail}`);
  }
}

export class FailureWatch {
  private best: { failure: RankFailure; weight: number } | null = null;
  private rejectFailed: ((e: RankFailure) => void) | null = null;
  private readonly listeners: (() => void)[] = [];
  private stopped = false;
  /** Rejects at the first report. Never resolves. */
  readonly failed: Promise<never>;

  constructor(private readonly graceMs = 1500) {
    this.failed = new Promise<never>((_, reject) => (this.rejectFailed = reject));
    this.failed.catch(() => {}); // observed through race() / explain()
  }

  get failure(): RankFailure | null {
    return this.best?.failure ?? null;
  }

  /** The job is ending on purpose: ranks leaving is no longer a failure. */
  stop(): void {
    this.stopped = true;
  }

  report(rank: number, source: FailureSource, detail: string): void {
    if (this.stopped) return;
    const weight = WEIGHT[source];
    if (this.best && this.best.weight >= weight) return;
    this.best = { failure: new RankFailure(rank, detail), weight };
    this.rejectFailed?.(this.best.failure);
    for (const l of this.listeners.splice(0)) l();
  }

  /** Runs `p`, failing as soon as any rank does. */
  race<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.failed]);
  }

  /**
   * The error to show for `e` (thrown by this rank's own work): the root-cause rank failure
   * when one is reported within the grace period, else `e` itself.
   */
  async explain(e: unknown): Promise<Error> {
    // An error of this rank's own making (not a lost peer) needs no root cause elsewhere.
    if (!this.best && !(e instanceof PeerLostError))
      return e instanceof Error ? e : new Error(String(e));
    const deadline = Date.now() + this.graceMs;
    while (Date.now() < deadline && (this.best?.weight ?? 0) < WEIGHT.status) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.listeners.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return this.best?.failure ?? (e instanceof Error ? e : new Error(String(e)));
  }
}
