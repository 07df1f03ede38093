/**
 * Whether the jobs the thread pool could split run on the worker threads or on the caller
 * alone, chosen by measurement. On a shared machine the extra threads buy nothing when other
 * processes hold the other cores: Linux shares CPU time fairly between sessions (autogroups),
 * so with one other busy session on 2 cores this process gets about one core whatever its
 * thread count, and the split only adds waits for a descheduled worker (measured here:
 * decode B=32 took 18.0 ms a step on 2 threads against 14.8 ms on 1, at 18.5 against 13.6
 * CPU ms, while other sessions used 45–50% of the cores). Quiet, 2 threads are ~1.6× faster.
 *
 * So the kernels time their splittable jobs (flops per ms) in windows of WINDOW jobs, one
 * mode per window: the preferred mode, and now and then the other one, whose rate is then
 * compared with the preferred mode's windows just before it (so both saw about the same load
 * and job mix); the preference flips when the other mode was MARGIN faster. Exploring is
 * asymmetric, because a wrong window costs more one way: while threads are preferred, solo
 * is tried every EXPLORE_SOLO-th window (a solo window on a quiet host runs ~1.6× slower, so
 * one window in 16 cost served c=32 ~4%); while solo is, threads every EXPLORE_THREADED-th
 * (a threaded window under load costs ~1.2×, and a host gone quiet is noticed sooner). Which
 * thread computes a chunk never changes its result, so the choice affects speed only.
 *
 * The first SETTLE jobs of a window after a change of mode (and of the first window) are not
 * timed: going threaded after a solo stretch starts slow (the worker, and its idle vCPU, wake
 * up). Measured on session 13's Zen 5 VM at decode B=32, 2 threads: the first 64 jobs of such
 * a window ran at 38-39 GFLOP/s, the next 64 at 57-58; timed whole, threaded windows lost to
 * solo and the choice stayed solo for hundreds of steps while threaded steps were faster.
 */
const WINDOW = 128;
/**
 * While threads are preferred, every this many windows run solo. Served c=32 (bench serve,
 * docs/benchmarks/cpu.md session 14b): 64 against 16 won 20 of 26 alternated rounds in four
 * sets, but the last, in a quieter period, only 1 of 6: a few percent at most.
 */
const EXPLORE_SOLO = 64;
/** While solo is preferred, every this many windows run threaded. */
const EXPLORE_THREADED = 16;
/** Weight of a new window in the preferred mode's average rate. */
const ALPHA = 0.5;
/** The other mode must be this much faster before the choice flips. */
const MARGIN = 1.05;
/** Jobs left untimed at the start of a window in a new mode. */
const SETTLE = 64;

export class ThreadMode {
  /** The preferred mode's recent rate (flops per ms, average of its last windows), or NaN. */
  private recent = NaN;
  private preferred = 1; // 1 threaded, 0 solo
  private mode = 1;
  private window = 0;
  private jobs = 0;
  /** Jobs of this window left untimed (SETTLE after a change of mode). */
  private settle = SETTLE;
  private flops = 0;
  private ms = 0;

  /** `enabled` false: always threaded (tests that must exercise the workers). */
  constructor(private readonly enabled: boolean) {}

  /** Whether the next splittable job should use the workers. */
  get threaded(): boolean {
    return this.mode === 1;
  }

  /** A splittable job of `flops` took `ms` in the current mode. */
  record(flops: number, ms: number): void {
    if (!this.enabled) return;
    if (this.jobs++ >= this.settle) {
      this.flops += flops;
      this.ms += ms;
    }
    if (this.jobs < WINDOW) return;
    const r = this.flops / Math.max(this.ms, 1e-6);
    this.jobs = 0;
    this.flops = 0;
    this.ms = 0;
    if (this.mode === this.preferred) {
      this.recent = Number.isNaN(this.recent) ? r : ALPHA * r + (1 - ALPHA) * this.recent;
    } else if (r > MARGIN * this.recent) {
      this.preferred = this.mode;
      this.recent = r;
    }
    this.window++;
    // window 1 tries the other mode at once; then every EXPLORE_SOLO-th or EXPLORE_THREADED-th
    const every = this.preferred === 1 ? EXPLORE_SOLO : EXPLORE_THREADED;
    const explore = this.window === 1 || this.window % every === 0;
    const next = explore ? 1 - this.preferred : this.preferred;
    this.settle = next === this.mode ? 0 : SETTLE;
    this.mode = next;
  }
}
