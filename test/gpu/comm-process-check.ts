/**
 * The CUDA IPC collectives with each rank a separate process sharing the one GPU: the real
 * IPC path (cuIpcGetMemHandle / cuIpcOpenMemHandle, handles over the peer mesh). Kernels of
 * different processes time-slice without MPS, so each spin barrier waits for the others'
 * time slices: the cases are small, and each group must finish within its timeout.
 */
import type { Row } from './check-util.js';
import type { ChildCheck, RankJob } from './comm-child.js';
import { projections } from './gemm-rs-case.js';
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
    const job = {
      maxBytes: W * maxT * o.hidden * 2,
      check: { tokens: o.tokens, hidden: o.hidden },
    };
    rows.push(...(await runChecks(W, job, o.timeoutMs)));
  }
  return rows;
}

/**
 * GEMM + reduce-scatter with the ranks as processes sharing the GPU: o_proj and down_proj at
 * M = 1024 (the graph too) and a padded small M, every case chunked (threshold 1 row); then
 * the all-to-all against the CPU definition in the same group.
 */
export async function checkGemmRsProcesses(
  ranks: readonly number[],
  timeoutMs: number,
): Promise<Row[]> {
  const rows: Row[] = [];
  for (const W of ranks) {
    const cases = [
      ...projections(W, 1024).map((p) => ({
        name: `${p.name} M=1024`,
        shape: p.shape,
        graph: true,
      })),
      { name: 'o_proj M=100', shape: { M: 100, N: 6144, K: 8192 / W } },
    ];
    const maxBytes = 1024 * 6144 * 2;
    rows.push(
      ...(await runChecks(
        W,
        { maxBytes, gemmRs: cases, gemmRsMinRows: 1, allToAll: true },
        timeoutMs,
      )),
    );
  }
  return rows;
}

async function runChecks(
  W: number,
  job: Pick<RankJob, 'maxBytes' | 'check' | 'gemmRs' | 'gemmRsMinRows' | 'allToAll'>,
  timeoutMs: number,
): Promise<Row[]> {
  const rows: Row[] = [];
  const o = { timeoutMs };
  {
    const jobs = Array.from({ length: W }, (_, rank) => ({
      rank,
      worldSize: W,
      ordinal: 0,
      ranksPerDevice: W,
      ...job,
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
