/**
 * The GEMM + reduce-scatter part of bench:comm: per W, ranks as streams of this process (one
 * GPU) or as processes on device rank % gpus (comm-child.ts), the points of
 * gemm-rs-bench-rank.ts printed as one table per W.
 */
import { CublasGemm } from '../src/backend/cuda/cublas-gemm.js';
import { matmul } from '../src/backend/cuda/matmul-ops.js';
import type { Tensor } from '../src/tensor/tensor.js';
import { streamGroup } from '../test/gpu/comm-check.js';
import { runRankGroup } from '../test/gpu/spawn-ranks.js';
import {
  benchGemmRs,
  gemmRsMaxBytes,
  PROJECTIONS,
  type GemmRsBenchJob,
  type GemmRsPoint,
  type Projection,
} from './gemm-rs-bench-rank.js';

export interface GemmRsRun {
  readonly ranks: number;
  readonly mode: string;
  readonly points: GemmRsPoint[];
}

async function processes(W: number, gpus: number, job: GemmRsBenchJob): Promise<GemmRsPoint[]> {
  const jobs = Array.from({ length: W }, (_, rank) => ({
    rank,
    worldSize: W,
    ordinal: rank % gpus,
    ranksPerDevice: Math.ceil(W / gpus),
    maxBytes: gemmRsMaxBytes(job, W),
    gemmRsMinRows: 1,
    gemmRsBench: job,
  }));
  const res = await runRankGroup<{ rank: number; bench: GemmRsPoint[] }>(jobs, 600_000);
  return res[0]!.bench.map((p, i) => ({ ...p, us: Math.max(...res.map((r) => r.bench[i]!.us)) }));
}

function streams(W: number, job: GemmRsBenchJob): GemmRsPoint[] {
  const g = streamGroup(W, gemmRsMaxBytes(job, W), undefined, { gemmRsMinRows: 1 });
  try {
    const ranks = g.ctxs.map((ctx, r) => {
      const gemm = new CublasGemm(ctx.dev);
      const mm = (o: Tensor, x: Tensor, w: Tensor) => matmul(ctx, gemm, o, x, w, true);
      // Timing only: the blocked path at every M (its bits are gpu-check's business).
      return { dev: ctx.dev, comm: g.comms[r]!, matmul: mm, rowInvariantFrom: () => 1 };
    });
    return benchGemmRs(ranks, job);
  } finally {
    g.close();
  }
}

function print(r: GemmRsRun, job: GemmRsBenchJob): void {
  console.log(
    `\nGEMM + reduce-scatter, ${r.ranks} ranks (${r.mode}), N ${job.hidden}, bf16: µs per op (median of ${job.reps} reps × ${job.iters} in a graph)`,
  );
  const projs = Object.keys(PROJECTIONS) as Projection[];
  const head = ['M', ...projs.flatMap((p) => [`${p} gemm`, 'gemm+rs', 'gemm-rs', 'speed-up'])];
  console.log(head.map((h) => h.padStart(15)).join(' '));
  for (const M of job.M) {
    const at = (proj: Projection, op: string): number =>
      r.points.find((p) => p.proj === proj && p.M === M && p.op === op)?.us ?? NaN;
    const cells = projs.flatMap((p) => [
      at(p, 'gemm').toFixed(1),
      at(p, 'gemm-then-rs').toFixed(1),
      at(p, 'gemm-rs').toFixed(1),
      `${(at(p, 'gemm-then-rs') / at(p, 'gemm-rs')).toFixed(2)}x`,
    ]);
    console.log([String(M), ...cells].map((c) => c.padStart(15)).join(' '));
  }
}

export async function runGemmRsBench(
  ranks: readonly number[],
  gpus: number,
  procs: boolean,
  job: GemmRsBenchJob,
): Promise<GemmRsRun[]> {
  const runs: GemmRsRun[] = [];
  for (const W of ranks) {
    const mode = procs
      ? `${W} processes on ${Math.min(W, gpus)} GPU(s), rank r on device r % ${gpus}`
      : `${W} streams of one process on 1 GPU`;
    const points = procs ? await processes(W, gpus, job) : streams(W, job);
    const run = { ranks: W, mode, points };
    print(run, job);
    runs.push(run);
  }
  return runs;
}
