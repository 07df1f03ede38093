import { Worker } from 'node:worker_threads';

/**
 * Worker threads sharing the WASM heap: thread 0 is the caller, threads 1..n−1 are workers,
 * each with its own instances of the same kernel modules over the same shared memory. A job
 * is one call per thread of a kernel export with that thread's arguments (its share of the
 * work, decided by the caller), so which thread computes which output is fixed by the job,
 * never by timing. Synchronisation: a generation counter and a pending count in a small
 * SharedArrayBuffer; workers spin briefly for the next job, then sleep in Atomics.wait.
 *
 * Workers are unref'd (they never keep the process alive) and `close()` ends them. A worker
 * that throws marks the job failed and the caller throws; a job not finished in JOB_TIMEOUT_MS
 * throws too, so a misbehaving worker cannot hang the engine.
 */
const GEN = 0;
const PENDING = 1;
const STOP = 2;
const FAILED = 3;
const ROW = 24; // float64 slots per thread: export index, then up to 23 arguments
const ARGS = 8; // float64 offset of thread 0's row
const SPIN = 20_000; // Atomics.load polls before sleeping (tens of µs)
const JOB_TIMEOUT_MS = 60_000;

// The worker's whole program: plain JS, so it runs the same from dist/ and from sources.
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const { memory, modules, exportNames, ctrl, index } = workerData;
const fns = [];
for (const m of modules) {
  const ex = new WebAssembly.Instance(m, { env: { memory } }).exports;
  for (const name of exportNames) if (ex[name]) fns[exportNames.indexOf(name)] = ex[name];
}
const c = new Int32Array(ctrl);
const f = new Float64Array(ctrl);
const row = ${ARGS} + index * ${ROW};
let seen = 0; // the generation when the pool was made: jobs may be posted before this worker starts
for (;;) {
  let spins = 0;
  while (Atomics.load(c, ${GEN}) === seen && spins < ${SPIN}) spins++;
  if (Atomics.load(c, ${GEN}) === seen) Atomics.wait(c, ${GEN}, seen, 100);
  if (Atomics.load(c, ${STOP}) !== 0) break;
  const g = Atomics.load(c, ${GEN});
  if (g === seen) continue;
  seen = g;
  const fn = f[row];
  try {
    if (fn >= 0) {
      const a = f.subarray(row + 1, row + ${ROW});
      fns[fn](a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21], a[22]);
    }
  } catch (e) {
    Atomics.store(c, ${FAILED}, 1);
  }
  if (Atomics.sub(c, ${PENDING}, 1) === 1) Atomics.notify(c, ${PENDING});
}
`;

type KernelFn = (...args: number[]) => void;

export class ThreadPool {
  private readonly ctrlBuf: SharedArrayBuffer;
  private readonly c: Int32Array;
  private readonly f: Float64Array;
  private readonly workers: Worker[] = [];
  private closed = false;
  /** A worker's start-up or uncaught error, reported by its 'error' event. */
  private broken: Error | null = null;

  /**
   * `threads` in all (the caller included). `fns` are the caller's kernel exports, named in
   * `exportNames` order; workers instantiate `modules` and take the same exports by name.
   */
  constructor(
    readonly threads: number,
    memory: object,
    modules: readonly object[],
    private readonly exportNames: readonly string[],
    private readonly fns: readonly KernelFn[],
  ) {
    this.ctrlBuf = new SharedArrayBuffer(8 * (ARGS + ROW * threads));
    this.c = new Int32Array(this.ctrlBuf);
    this.f = new Float64Array(this.ctrlBuf);
    for (let index = 1; index < threads; index++) {
      const w = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: { memory, modules, exportNames, ctrl: this.ctrlBuf, index },
      });
      w.on('error', (e) => (this.broken ??= e));
      w.unref();
      this.workers.push(w);
    }
  }

  /**
   * Runs `rows[i]` = [export name, ...arguments] on thread i (rows beyond the given ones
   * idle) and returns when every thread is done. Thread 0's row runs on the caller.
   */
  run(rows: readonly (readonly [string, ...number[]])[]): void {
    if (this.closed) throw new Error('CPU thread pool: used after close()');
    if (this.broken)
      throw new Error(`CPU thread pool: a worker thread died: ${this.broken.message}`);
    const n = Math.min(rows.length, this.threads);
    if (n <= 1) {
      if (rows[0]) this.call(rows[0]);
      return;
    }
    const { c, f } = this;
    for (let i = 1; i < this.threads; i++) {
      const r = i < n ? rows[i]! : null;
      const base = ARGS + i * ROW;
      f[base] = r ? this.exportIndex(r[0]) : -1;
      if (r) for (let a = 1; a < r.length; a++) f[base + a] = r[a] as number;
    }
    Atomics.store(c, FAILED, 0);
    Atomics.store(c, PENDING, this.threads - 1);
    Atomics.add(c, GEN, 1);
    Atomics.notify(c, GEN);
    let error: unknown = null;
    try {
      this.call(rows[0]!);
    } catch (e) {
      error = e;
    }
    this.await();
    if (error) throw error;
    if (Atomics.load(c, FAILED) !== 0)
      throw new Error('CPU thread pool: a kernel failed on a worker thread');
  }

  private call(r: readonly [string, ...number[]]): void {
    const fn = this.fns[this.exportIndex(r[0])]!;
    fn(...(r.slice(1) as number[]));
  }

  private exportIndex(name: string): number {
    const i = this.exportNames.indexOf(name);
    if (i < 0) throw new Error(`CPU thread pool: no kernel export ${name}`);
    return i;
  }

  private await(): void {
    const { c } = this;
    for (let spins = 0; spins < SPIN; spins++) if (Atomics.load(c, PENDING) === 0) return;
    const t0 = Date.now();
    for (;;) {
      const p = Atomics.load(c, PENDING);
      if (p === 0) return;
      Atomics.wait(c, PENDING, p, 100);
      if (Date.now() - t0 > JOB_TIMEOUT_MS) {
        this.close();
        throw new Error(
          `CPU thread pool: a worker thread did not finish within ${JOB_TIMEOUT_MS / 1000} s`,
        );
      }
    }
  }

  /** Ends the workers; later run() calls throw. Safe to call twice. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    Atomics.store(this.c, STOP, 1);
    Atomics.add(this.c, GEN, 1);
    Atomics.notify(this.c, GEN);
    for (const w of this.workers) void w.terminate();
  }
}
