/** Float64 slots per chunk row: the kernel export's index, then up to 23 arguments. */
export const ROW = 24;

type KernelFn = (...args: number[]) => void;

/**
 * The chunks of the pool job being built, written straight into the pool's shared argument
 * rows (thread-pool.ts), where the workers read them: row k = the kernel export's index, then
 * its arguments; a kernel ignores the slots past its own (WASM drops extra arguments), so
 * `add` writes 0 there. Until session 15 a chunk was an array [name, ...args] that `run`
 * copied in: ~90 arrays a decode B=1 step, ~60 of its ~190 KB of garbage.
 *
 * The pool hands out its one instance (ThreadPool.job), emptied: the rows may be rewritten
 * only between jobs, when no worker reads them, and one job is built and run at a time.
 */
export class JobRows {
  private n = 0;

  constructor(
    private readonly f: Float64Array,
    /** Float64 offset of row 0 in `f`. */
    private readonly base: number,
    readonly capacity: number,
  ) {}

  /** Chunks added since the job began. */
  get length(): number {
    return this.n;
  }

  /** Empties the rows for a new job (ThreadPool.job). */
  clear(): void {
    this.n = 0;
  }

  /** Appends a chunk: kernel export `fn` (its index) with its arguments. */
  // prettier-ignore
  add(fn: number, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0, a8 = 0, a9 = 0, a10 = 0,
      a11 = 0, a12 = 0, a13 = 0, a14 = 0, a15 = 0, a16 = 0, a17 = 0, a18 = 0, a19 = 0, a20 = 0,
      a21 = 0, a22 = 0, a23 = 0): void {
    if (this.n >= this.capacity)
      throw new Error(`CPU thread pool: more than ${this.capacity} chunks in one job`);
    const f = this.f;
    const r = this.base + ROW * this.n++;
    f[r] = fn;
    f[r + 1] = a1; f[r + 2] = a2; f[r + 3] = a3; f[r + 4] = a4; f[r + 5] = a5; f[r + 6] = a6;
    f[r + 7] = a7; f[r + 8] = a8; f[r + 9] = a9; f[r + 10] = a10; f[r + 11] = a11; f[r + 12] = a12;
    f[r + 13] = a13; f[r + 14] = a14; f[r + 15] = a15; f[r + 16] = a16; f[r + 17] = a17;
    f[r + 18] = a18; f[r + 19] = a19; f[r + 20] = a20; f[r + 21] = a21; f[r + 22] = a22;
    f[r + 23] = a23;
  }

  /** Runs chunk k on this thread: `fns` are the kernel exports by index. */
  call(k: number, fns: readonly KernelFn[]): void {
    const f = this.f;
    const r = this.base + ROW * k;
    // prettier-ignore
    fns[f[r]!]!(f[r + 1]!, f[r + 2]!, f[r + 3]!, f[r + 4]!, f[r + 5]!, f[r + 6]!, f[r + 7]!, f[r + 8]!,
      f[r + 9]!, f[r + 10]!, f[r + 11]!, f[r + 12]!, f[r + 13]!, f[r + 14]!, f[r + 15]!, f[r + 16]!,
      f[r + 17]!, f[r + 18]!, f[r + 19]!, f[r + 20]!, f[r + 21]!, f[r + 22]!, f[r + 23]!);
  }
}
