/**
 * Interleaved timing of configurations compared side by side (e.g. a model on 1 thread and on
 * 2). Timed one after another, the comparison was biased by position: whichever ran first paid
 * extra CPU time (with 1 thread timed first, a B=1 decode step took 2.11 ms on it and 1.96 ms
 * on 2 threads, timed second). Here every round runs one turn of each configuration (a step,
 * or a Block of steps), the order rotated by one each round (2 configurations: AB, BA, AB, …),
 * so each sits in every position equally often and all see the same machine load.
 */

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Wall ms and this process's CPU ms so far (all its threads); injected by tests. */
export interface BenchClock {
  now(): number;
  cpuMs(): number;
}

export const realClock: BenchClock = {
  now: () => performance.now(),
  cpuMs: () => {
    const c = process.cpuUsage();
    return (c.user + c.system) / 1000;
  },
};

/**
 * Untimed warm-up of each configuration: at least `warm` steps and this many ms of its own
 * steps. V8 keeps compiling the forward's JS (tiering up, re-optimising after deopts) for the
 * first few hundred decode steps: measured here, B=1 steps took 0.86 → 0.47 → 0.35 ms over
 * the first 100 / 200 / 400 steps, so a fixed 8 warm-up steps timed the compiler. On session
 * 13's Zen 5 VM it took longer: medians of 500-step buckets of one B=1 loop 0.74, 0.64, 0.52,
 * 0.51 ms (another run 0.61, 0.53, 0.50, 0.49), i.e. ~1,000–1,500 steps, where 500 ms covered
 * ~700; 1,500 ms covers ~2,000.
 */
export const WARM_MS = 1500;

/** Configuration indices of round `r` of `n`: 0..n-1 rotated left by r. */
export function roundOrder(r: number, n: number): number[] {
  return Array.from({ length: n }, (_, j) => (r + j) % n);
}

/** The order, as recorded beside each row. */
export function orderNote(labels: readonly string[], block: Block = STEP_BLOCK): string {
  if (labels.length < 2) return 'alone';
  const unit =
    block.steps === 1 && block.lead === 0
      ? 'each step'
      : `each ${block.steps} timed steps after ${block.lead} untimed`;
  return `interleaved, rotated ${unit}: ${labels.join(', ')}`;
}

/**
 * The unit the configurations take turns in: `lead` untimed steps, then `steps` timed ones.
 * Turns of one step suit steps that take far longer than refilling the caches (a prefill);
 * a decode step of the bundled model does not: each configuration holds its own ~7 MB of
 * weights, and reading them after the other configuration's step evicted them from L3 cost
 * a B=1 step +0.25 ms here (0.59 → 0.85 ms after streaming 8 MB between steps), about what a
 * served engine, which runs one model, never pays.
 */
export interface Block {
  readonly steps: number;
  readonly lead: number;
}

export const STEP_BLOCK: Block = { steps: 1, lead: 0 };

export interface Timing {
  /** Median ms of the timed steps. */
  readonly ms: number;
  /** This process's CPU ms per timed step (a worker's spin after a step lands on the next). */
  readonly cpuMs: number;
}

/**
 * Steady-state timings of `runs` (one per configuration), interleaved: warm-up rounds
 * (`run(-1)`) until every configuration has had `warm` steps and `warmMs` of them, then
 * `reps` timed steps each (`run(i)`, i = 0..reps-1), taken in turns of `block` (Block): each
 * step timed alone so preemption by other work only hits the steps it lands on; a turn's
 * lead steps run untimed as `run(-1)`. Medians per configuration. `reps / block.steps` a
 * multiple of the number of configurations puts each in each position equally often.
 */
export async function timeInterleaved(
  runs: readonly ((i: number) => Promise<unknown>)[],
  warm: number,
  reps: number,
  clock: BenchClock = realClock,
  warmMs = WARM_MS,
  block: Block = STEP_BLOCK,
): Promise<Timing[]> {
  const n = runs.length;
  const warmSteps = new Array<number>(n).fill(0);
  const warmTime = new Array<number>(n).fill(0);
  const cold = (): boolean => warmSteps.some((s, k) => s < warm || warmTime[k]! < warmMs);
  // every configuration keeps warming until all are warm: the timed rounds interleave them,
  // so the warm-up does too (caches, thread pools and the JIT then see the timed pattern)
  for (let r = 0; cold(); r++) {
    for (const k of roundOrder(r, n)) {
      const t0 = clock.now();
      await runs[k]!(-1);
      warmTime[k]! += clock.now() - t0;
      warmSteps[k]!++;
    }
  }
  const ts = runs.map((): number[] => []);
  const cpu = new Array<number>(n).fill(0);
  for (let r = 0; r * block.steps < reps; r++) {
    for (const k of roundOrder(r, n)) {
      for (let j = 0; j < block.lead; j++) await runs[k]!(-1);
      for (let i = r * block.steps; i < Math.min(reps, (r + 1) * block.steps); i++) {
        const c0 = clock.cpuMs();
        const t0 = clock.now();
        await runs[k]!(i);
        ts[k]!.push(clock.now() - t0);
        cpu[k]! += clock.cpuMs() - c0;
      }
    }
  }
  return ts.map((t, k) => ({ ms: median(t), cpuMs: cpu[k]! / Math.max(1, reps) }));
}
