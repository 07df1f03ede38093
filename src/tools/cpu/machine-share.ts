import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

/**
 * What a bench row had of the machine: this process's CPU time (all its threads) and the busy
 * time of every other process, from /proc/stat's busy jiffies minus this process's own, over
 * the row's wall time. On a shared machine the load average says little about a 2-second row;
 * this says how much of the cores others took while it ran. Linux only (null elsewhere).
 */
export interface MachineShare {
  /** This process's CPU ms per timed step (its worker threads included). */
  readonly cpuMsPerStep: number;
  /** Other processes' busy time as a fraction of all cores (0–1), or null off Linux. */
  readonly othersBusy: number | null;
}

/** Busy (non-idle, non-iowait) ms of all cores so far, from /proc/stat, or null. */
function busyMs(): number | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest time is already in user)
    const busy = f[0]! + f[1]! + f[2]! + f[5]! + f[6]! + f[7]!;
    return (busy * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return null;
  }
}

/** Starts a measurement; the returned function ends it over `steps` steps. */
export function startShare(): (steps: number) => MachineShare {
  const b0 = busyMs();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  return (steps) => {
    const c = process.cpuUsage(c0);
    const ours = (c.user + c.system) / 1000;
    const wall = performance.now() - t0;
    const b1 = busyMs();
    const others =
      b0 === null || b1 === null || wall <= 0
        ? null
        : Math.min(1, Math.max(0, (b1 - b0 - ours) / (wall * cpus().length)));
    return { cpuMsPerStep: ours / Math.max(1, steps), othersBusy: others };
  };
}
