import { Worker } from 'node:worker_threads';
import { JobRows, ROW } from './job-rows.js';

/**
 * Worker threads sharing the WASM heap: the caller plus threads − 1 workers, each with its own
 * instances of the same kernel modules over the same shared memory. A job is a list of chunks,
 * each one call of a kernel export with its arguments (JobRows, written in place in the shared
 * rows; the caller decides what each chunk computes: a fixed set of output elements). Threads
 * claim chunks from a shared counter, so a thread the OS has descheduled does not hold up the
 * others (the caller takes its share); which thread runs a chunk never changes what the chunk
 * computes, so results do not depend on timing or on the thread count.
 *
 * Synchronisation in a small SharedArrayBuffer: a generation counter wakes workers (they spin
 * briefly, then sleep in Atomics.wait); DONE counts finished chunks; ACTIVE counts workers
 * inside a job, and arguments are rewritten only when it is 0; SLEEPING counts workers in
 * Atomics.wait. Waking one costs far more than a small job (measured here: ~160 µs median
 * under load, the woken thread often preempting the caller on its core), so a job posted with
 * `wake` false runs on the caller alone when every worker sleeps. A worker spins only after a
 * job: one whose 100 ms wait timed out sleeps again at once (it used to spin again, showing
 * SLEEPING 0, so the small jobs posted meanwhile were split onto it). Workers are unref'd (they never
 * keep the process alive) and `close()` ends them. A chunk that throws on a worker fails the
 * job on the caller; a job not finished in JOB_TIMEOUT_MS throws, so a misbehaving worker
 * cannot hang the engine.
 */
// Int32 slots, in three 64-byte cache lines by who writes them when: a spinning worker polls
// GEN, so the caller's claims and counts during a job (NEXT, DONE) do not invalidate that line
// on every update (and the worker's polls do not pull the caller's line away).
const GEN = 0;
const STOP = 1;
const FAILED = 2;
const SLEEPING = 3; // workers inside Atomics.wait
const NEXT = 16; // next chunk to claim
const NCHUNKS = 17;
const DONE = 32;
const ACTIVE = 33;
const ARGS = 24; // float64 offset of chunk 0's row (byte 192: after the three lines)
const SPIN = 20_000; // Atomics.load polls before sleeping (about 400 µs on session 12's Xeon VM)
const JOB_TIMEOUT_MS = 60_000;
const CLOSED = 1 << 30; // NEXT between jobs (while the next one's rows are written): beyond any chunk

/** The most chunks one job may have. */
export const MAX_CHUNKS = 256;

// The worker's whole program: plain JS, so it runs the same from dist/ and from sources.
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const { memory, modules, exportNames, ctrl } = workerData;
const fns = [];
for (const m of modules) {
  const ex = new WebAssembly.Instance(m, { env: { memory } }).exports;
  for (const name of exportNames) if (ex[name]) fns[exportNames.indexOf(name)] = ex[name];
}
const c = new Int32Array(ctrl);
const f = new Float64Array(ctrl);
let seen = 0; // the generation when the pool was made: jobs may be posted before this worker starts
let spin = true; // right after a job only: a worker back from a timed-out wait sleeps again at once
for (;;) {
  let spins = spin ? 0 : ${SPIN};
  while (Atomics.load(c, ${GEN}) === seen && spins < ${SPIN}) spins++;
  if (Atomics.load(c, ${GEN}) === seen) {
    Atomics.add(c, ${SLEEPING}, 1);
    Atomics.wait(c, ${GEN}, seen, 100);
    Atomics.sub(c, ${SLEEPING}, 1);
  }
  if (Atomics.load(c, ${STOP}) !== 0) break;
  const g = Atomics.load(c, ${GEN});
  if (g === seen) {
    spin = false;
    continue;
  }
  spin = true;
  seen = g;
  Atomics.add(c, ${ACTIVE}, 1);
  for (let k = Atomics.add(c, ${NEXT}, 1); k < Atomics.load(c, ${NCHUNKS}); k = Atomics.add(c, ${NEXT}, 1)) {
    const row = ${ARGS} + k * ${ROW};
    try {
      fns[f[row]](f[row + 1], f[row + 2], f[row + 3], f[row + 4], f[row + 5], f[row + 6], f[row + 7], f[row + 8], f[row + 9], f[row + 10], f[row + 11], f[row + 12],
        f[row + 13], f[row + 14], f[row + 15], f[row + 16], f[row + 17], f[row + 18], f[row + 19], f[row + 20], f[row + 21], f[row + 22], f[row + 23]);
    } catch (e) {
      Atomics.store(c, ${FAILED}, 1);
    }
    if (Atomics.add(c, ${DONE}, 1) + 1 === Atomics.load(c, ${NCHUNKS})) Atomics.notify(c, ${DONE});
  }
  if (Atomics.sub(c, ${ACTIVE}, 1) === 1) Atomics.notify(c, ${ACTIVE});
}
`;

type KernelFn = (...args: number[]) => void;

export class ThreadPool {
  private readonly c: Int32Array;
  private readonly workers: Worker[] = [];
  private readonly rows: JobRows;
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
    exportNames: readonly string[],
    private readonly fns: readonly KernelFn[],
  ) {
    const ctrl = new SharedArrayBuffer(8 * (ARGS + ROW * MAX_CHUNKS));
    this.c = new Int32Array(ctrl);
    this.rows = new JobRows(new Float64Array(ctrl), ARGS, MAX_CHUNKS);
    this.c[NEXT] = CLOSED;
    this.c[NCHUNKS] = 0;
    for (let index = 1; index < threads; index++) {
      const w = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: { memory, modules, exportNames, ctrl },
      });
      w.on('error', (e) => (this.broken ??= e));
      w.unref();
      this.workers.push(w);
    }
  }

  /**
   * The job to build next: the pool's shared rows, emptied (add its chunks, then `run` it).
   * Called only between jobs (run returns with no worker inside one), so no worker reads the
   * rows while they are rewritten.
   */
  job(): JobRows {
    this.rows.clear();
    return this.rows;
  }

  /**
   * Runs every chunk of `job` (this pool's, from `job()`; in no fixed order, on any threads)
   * and returns when all are done. With `wake` false the chunks run on the caller when all
   * workers sleep (a job too small to pay for waking one), with `solo` on the caller always;
   * the chunks compute the same elements either way.
   */
  run(job: JobRows, wake = true, solo = false): void {
    if (this.closed) throw new Error('CPU thread pool: used after close()');
    if (this.broken)
      throw new Error(`CPU thread pool: a worker thread died: ${this.broken.message}`);
    if (job !== this.rows) throw new Error('CPU thread pool: a job from another pool');
    const n = job.length;
    const asleep = !wake && Atomics.load(this.c, SLEEPING) === this.workers.length;
    if (this.threads === 1 || n <= 1 || asleep || solo) {
      for (let k = 0; k < n; k++) job.call(k, this.fns);
      return;
    }
    const { c } = this;
    // The rows are written already; NEXT, CLOSED between jobs, opens this one last.
    Atomics.store(c, FAILED, 0);
    Atomics.store(c, DONE, 0);
    Atomics.store(c, NCHUNKS, n);
    Atomics.store(c, NEXT, 0); // last: opens the job to claims
    Atomics.add(c, GEN, 1);
    Atomics.notify(c, GEN);
    let error: unknown = null;
    for (let k = Atomics.add(c, NEXT, 1); k < n; k = Atomics.add(c, NEXT, 1)) {
      try {
        job.call(k, this.fns);
      } catch (e) {
        error ??= e;
      }
      Atomics.add(c, DONE, 1);
    }
    this.waitFor(DONE, n);
    this.waitFor(ACTIVE, 0); // no worker still inside: the rows may be rewritten
    Atomics.store(c, NEXT, CLOSED); // a worker arriving late claims nothing while the next is built
    if (error) throw error;
    if (Atomics.load(c, FAILED) !== 0)
      throw new Error('CPU thread pool: a kernel failed on a worker thread');
  }

  private waitFor(slot: number, value: number): void {
    const { c } = this;
    for (let spins = 0; spins < SPIN; spins++) if (Atomics.load(c, slot) === value) return;
    const t0 = Date.now();
    for (;;) {
      const v = Atomics.load(c, slot);
      if (v === value) return;
      Atomics.wait(c, slot, v, 10);
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
