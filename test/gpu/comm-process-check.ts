/**
 * The CUDA IPC collectives with each rank a separate process sharing the one GPU: the real
 * IPC path (cuIpcGetMemHandle / cuIpcOpenMemHandle, handles over the peer mesh). Kernels of
 * different processes time-slice without MPS, so each spin barrier waits for the others'
 * time slices: the cases are small, and each group must finish within its timeout.
 */
import type { Row } from './check-util.js';
import type { ChildCheck } from './comm-child.js';
import { runRankGroup } from './spawn-ranks.js';

export interface ProcessCheckOptions {
  readonly ranks: readonly number[];
  readonly tokens: readonly number[];
  readonly hidden: number;
  readonly timeoutMs: number;
}

export async function checkCommProcesses(o: ProcessCheckOptions): Promise<Row[]> {
  const rows: Row[] = [];
  for (const W of o.ranks) {
    const maxT = Math.max(...o.tokens);
    const jobs = Array.from({ length: W }, (_, rank) => ({
      rank,
      worldSize: W,
      ordinal: 0,
      ranksPerDevice: W,
      maxBytes: W * maxT * o.hidden * 2,
      check: { tokens: o.tokens, hidden: o.hidden },
    }));
    const t0 = performance.now();
    try {
      const res = await runRankGroup<{ rank: number; checks: ChildCheck[] }>(jobs, o.timeoutMs);
      const secs = ((performance.now() - t0) / 1000).toFixed(1);
      res[0]!.checks.forEach((c, i) => {
        const mism = res.reduce((m, r) => m + r.checks[i]!.mismatches, 0);
        rows.push({
          check: `processes W=${W}: ${c.check}`,
          value: `${mism} bits differ`,
          limit: '0',
          pass: mism === 0,
        });
      });
      rows.push({
        check: `processes W=${W}: group finished`,
        value: `${secs} s`,
        limit: `${o.timeoutMs / 1000} s`,
        pass: true,
      });
    } catch (e) {
      rows.push({
        check: `processes W=${W}`,
        value: (e as Error).message,
        limit: 'completes',
        pass: false,
      });
    }
  }
  return rows;
}
