/**
 * bench:comm — latency of the CUDA IPC collectives (all-reduce one-shot and two-shot,
 * all-gather, reduce-scatter) and of the fused all-reduce + residual add + RMSNorm against the
 * unfused all-reduce then add_rmsnorm, at 1..8192 tokens × hidden, bf16, for 2/4/8 ranks; and
 * GEMM + reduce-scatter against GEMM then reduce-scatter for o_proj (K 8192/W) and the dense
 * down_proj (K 12288/W) at M 128..32768 (gemm-rs-bench-rank.ts):
 *   npm run bench:comm -- [--ranks 2,4,8] [--tokens 1,8,...,8192] [--hidden 6144]
 *        [--gemm-rs-m 128,512,...,32768] [--only collectives,gemm-rs]
 *        [--iters 20] [--reps 5] [--gpus N] [--procs] [--out DIR]
 * Rank → device: with one GPU, the W ranks are W streams of this process (stream emulation);
 * with N ≥ 2 GPUs (or --procs), each rank is its own process on device rank % N, ranks
 * sharing a device counted in ranksPerDevice, exchanging IPC handles (the same script runs
 * unchanged on 2–8 GPUs). all-gather / reduce-scatter move a [T, D] tensor in total
 * (ceil(T/W) rows per rank). Prints one table per W and writes comm-bench.json under --out
 * (default $OUT or .).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CudaDevice } from '../src/backend/cuda/device.js';
import { loadCudaLibs } from '../src/backend/cuda/ffi.js';
import { ONE_SHOT_MAX_BYTES } from '../src/parallel/cuda-ipc/allreduce-algorithm.js';
import { streamGroup } from '../test/gpu/comm-check.js';
import { runRankGroup } from '../test/gpu/spawn-ranks.js';
import { BENCH_OPS, benchRank, type BenchJob, type BenchPoint } from './comm-bench-rank.js';
import { runGemmRsBench } from './gemm-rs-bench.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}
const list = (s: string): number[] => s.split(',').map(Number);

function deviceCount(): number {
  const n = [0];
  const libs = loadCudaLibs();
  new CudaDevice(libs, 0).check.cu(libs.cu.cuDeviceGetCount(n), 'cuDeviceGetCount');
  return n[0]!;
}

interface Run {
  readonly ranks: number;
  readonly mode: string;
  readonly points: BenchPoint[];
}

async function runProcesses(W: number, gpus: number, job: BenchJob): Promise<BenchPoint[]> {
  const maxT = Math.max(...job.tokens);
  const jobs = Array.from({ length: W }, (_, rank) => ({
    rank,
    worldSize: W,
    ordinal: rank % gpus,
    ranksPerDevice: Math.ceil(W / gpus),
    maxBytes: Math.ceil(maxT / W) * W * job.hidden * 2,
    bench: job,
  }));
  const res = await runRankGroup<{ rank: number; bench: BenchPoint[] }>(jobs, 600_000);
  // The slowest rank per point.
  return res[0]!.bench.map((p, i) => ({ ...p, us: Math.max(...res.map((r) => r.bench[i]!.us)) }));
}

function printRun(r: Run, job: BenchJob): void {
  console.log(
    `\n${r.ranks} ranks (${r.mode}), hidden ${job.hidden}, bf16: µs per op (median of ${job.reps} reps × ${job.iters} in a graph)`,
  );
  const head = ['tokens', ...job.ops, 'fused speed-up'];
  console.log(head.map((h) => h.padStart(14)).join(' '));
  for (const T of job.tokens) {
    const at = (op: string): number =>
      r.points.find((p) => p.tokens === T && p.op === op)?.us ?? NaN;
    const cells = job.ops.map((op) => at(op).toFixed(1));
    const speedup = at('unfused-ar-add-norm') / at('fused-ar-add-norm');
    console.log(
      [String(T), ...cells, `${speedup.toFixed(2)}x`].map((c) => c.padStart(14)).join(' '),
    );
  }
}

async function main(): Promise<void> {
  // Load every kernel of a module with it: a lazily loaded first launch may wait behind a
  // kernel spinning for another rank (CUDA lazy-loading caveat for interdependent kernels).
  process.env['CUDA_MODULE_LOADING'] ??= 'EAGER';
  const job: BenchJob = {
    tokens: list(arg('tokens', '1,8,64,128,512,1024,2048,4096,8192')),
    hidden: Number(arg('hidden', '6144')),
    iters: Number(arg('iters', '20')),
    reps: Number(arg('reps', '5')),
    ops: BENCH_OPS,
  };
  const ranks = list(arg('ranks', '2,4,8'));
  const gpus = process.argv.includes('--gpus') ? Number(arg('gpus', '1')) : deviceCount();
  const procs = process.argv.includes('--procs') || gpus > 1;
  const only = new Set(arg('only', 'collectives,gemm-rs').split(','));
  const runs: Run[] = [];
  for (const W of only.has('collectives') ? ranks : []) {
    let points: BenchPoint[];
    let mode: string;
    if (procs) {
      mode = `${W} processes on ${Math.min(W, gpus)} GPU(s), rank r on device r % ${gpus}`;
      points = await runProcesses(W, gpus, job);
    } else {
      mode = `${W} streams of one process on 1 GPU`;
      const maxT = Math.max(...job.tokens);
      const g = streamGroup(W, Math.ceil(maxT / W) * W * job.hidden * 2);
      try {
        points = benchRank(g.ctxs, g.comms, job);
      } finally {
        g.close();
      }
    }
    const run = { ranks: W, mode, points };
    printRun(run, job);
    runs.push(run);
  }
  const gemmRsJob = {
    M: list(arg('gemm-rs-m', '128,512,768,1024,1536,2048,4096,8192,16384,32768')),
    hidden: job.hidden,
    iters: Math.max(1, Math.floor(job.iters / 4)),
    reps: job.reps,
  };
  const gemmRs = only.has('gemm-rs') ? await runGemmRsBench(ranks, gpus, procs, gemmRsJob) : [];
  const outDir = arg('out', process.env['OUT'] ?? '.');
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, 'comm-bench.json');
  writeFileSync(
    file,
    JSON.stringify(
      { job, gpus, oneShotMaxBytes: ONE_SHOT_MAX_BYTES, runs, gemmRsJob, gemmRs },
      null,
      2,
    ),
  );
  console.log(`\nwrote ${file}`);
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 1;
});
