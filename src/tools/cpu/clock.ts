/**
 * The core clock as code sees it, measured with a dependent chain of integer adds (one add
 * per cycle on every current x86 and Arm core: each add needs the previous result). The
 * `/proc/cpuinfo` figure is the nominal clock, not the boost clock the core really runs at.
 * Short runs, best of many: on a shared machine a run that was not preempted shows the clock.
 */
function addChain(n: number, y: number): number {
  let x = 0;
  for (let i = 0; i < n; i++) {
    // 16 dependent adds per iteration; the loop counter runs alongside
    x = (x + y) | 0;
    x = (x + y) | 0;
    x = (x + y) | 0;
    x = (x + y) | 0; // prettier-ignore
    x = (x + y) | 0;
    x = (x + y) | 0;
    x = (x + y) | 0;
    x = (x + y) | 0; // prettier-ignore
    x = (x + y) | 0;
    x = (x + y) | 0;
    x = (x + y) | 0;
    x = (x + y) | 0; // prettier-ignore
    x = (x + y) | 0;
    x = (x + y) | 0;
    x = (x + y) | 0;
    x = (x + y) | 0; // prettier-ignore
  }
  return x;
}

/** GHz: adds per second of the best of `reps` runs of 3.2 M dependent adds. */
export function measureClockGhz(reps = 200): number {
  const y = (Date.now() & 1) + 3; // not a constant the JIT could fold
  const n = 200_000;
  addChain(n, y);
  let best = 0;
  let sink = 0;
  for (let r = 0; r < reps; r++) {
    const t0 = process.hrtime.bigint();
    sink ^= addChain(n, y);
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    best = Math.max(best, (16 * n) / s / 1e9);
  }
  if (sink === 0.5) console.log(sink); // keeps the chain's result live
  return best;
}
