/**
 * The GEMM + reduce-scatter timing loop of bench:comm for the ranks this process drives (all
 * W as streams, or its one rank as a process): for o_proj (K = 8192/W) and the dense down_proj
 * (K = 12288/W) at N = hidden and each M, the GEMM alone, GEMM then reduce-scatter, and the
 * communicator's matmulReduceScatter (its threshold at 1 row, so the chunked path is timed at
 * every M). `iters` ops per CUDA graph per rank, the slowest local rank per rep, the median of
 * `reps`. Inputs are zeros (correctness is test:gpu's job).
 */
import { CudaTensor } from '../src/backend/cuda/cuda-tensor.js';
import type { CudaDevice } from '../src/backend/cuda/device.js';
import { rowView } from '../src/parallel/cuda-ipc/gemm-reduce-scatter.js';
import type { GemmRsRank } from '../test/gpu/gemm-rs-case.js';

export const GEMM_RS_OPS = ['gemm', 'gemm-then-rs', 'gemm-rs'] as const;
export type GemmRsOp = (typeof GEMM_RS_OPS)[number];
export const PROJECTIONS = { o_proj: 8192, down_proj: 12288 } as const;
export type Projection = keyof typeof PROJECTIONS;

export interface GemmRsBenchJob {
  readonly M: readonly number[];
  readonly hidden: number;
  readonly iters: number;
  readonly reps: number;
}

export interface GemmRsPoint {
  readonly proj: Projection;
  readonly M: number;
  readonly K: number;
  readonly op: GemmRsOp;
  /** Median over reps of the slowest local rank's time per op, µs. */
  readonly us: number;
}

/** Bytes of the largest `all` [W·⌈M/W⌉, N] of the job: the IPC buffers' maxBytes. */
export function gemmRsMaxBytes(job: GemmRsBenchJob, W: number): number {
  return Math.max(...job.M.map((M) => Math.ceil(M / W) * W * job.hidden * 2));
}

function zeros(dev: CudaDevice, shape: number[]): CudaTensor {
  const bytes = shape.reduce((a, b) => a * b, 1) * 2;
  const ptr = dev.malloc(bytes, 'GEMM-RS bench tensor');
  dev.memsetAsync(ptr, 0, bytes);
  return new CudaTensor(shape, 'bf16', ptr, null);
}

type Bufs = Record<'x' | 'w' | 'all' | 'out', CudaTensor>;

function enqueue(op: GemmRsOp, r: GemmRsRank, b: Bufs, M: number): void {
  if (op === 'gemm-rs') return r.comm.matmulReduceScatter(b.out, b.all, b.x, b.w, r.matmul);
  r.matmul(rowView(b.all, 0, M), b.x, b.w);
  if (op === 'gemm-then-rs') r.comm.reduceScatter(b.out, b.all);
}

function median(a: number[]): number {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)]!;
}

/** Times one op on every local rank (peers in other processes run the same loop). */
function time(
  ranks: readonly GemmRsRank[],
  bufs: Bufs[],
  op: GemmRsOp,
  M: number,
  job: GemmRsBenchJob,
): number {
  ranks.forEach((r, i) => enqueue(op, r, bufs[i]!, M)); // warm-up: loads kernels, sizes workspaces
  ranks.forEach((r) => r.dev.sync());
  const graphs = ranks.map((r, i) =>
    r.dev.capture(() => {
      for (let k = 0; k < job.iters; k++) enqueue(op, r, bufs[i]!, M);
    }),
  );
  graphs.forEach((g) => g.launch());
  const events = ranks.map((r) => [r.dev.createEvent(), r.dev.createEvent()] as const);
  const times: number[] = [];
  for (let rep = 0; rep < job.reps; rep++) {
    if (ranks.length === 1) ranks[0]!.comm.barrier();
    else ranks.forEach((r) => r.dev.sync());
    graphs.forEach((g, i) => {
      ranks[i]!.dev.record(events[i]![0]);
      g.launch();
      ranks[i]!.dev.record(events[i]![1]);
    });
    const ms = ranks.map((r, i) => r.dev.elapsed(events[i]![0], events[i]![1]));
    times.push((Math.max(...ms) * 1000) / job.iters);
  }
  graphs.forEach((g) => g.destroy());
  events.forEach((e, i) => e.forEach((ev) => ranks[i]!.dev.destroyEvent(ev)));
  return median(times);
}

export function benchGemmRs(ranks: readonly GemmRsRank[], job: GemmRsBenchJob): GemmRsPoint[] {
  const W = ranks[0]!.comm.worldSize;
  const N = job.hidden;
  const points: GemmRsPoint[] = [];
  for (const proj of Object.keys(PROJECTIONS) as Projection[]) {
    const K = PROJECTIONS[proj] / W;
    for (const M of job.M) {
      const n = Math.ceil(M / W);
      const bufs = ranks.map(({ dev }) => ({
        x: zeros(dev, [M, K]),
        w: zeros(dev, [N, K]),
        all: zeros(dev, [W * n, N]),
        out: zeros(dev, [n, N]),
      }));
      for (const op of GEMM_RS_OPS)
        points.push({ proj, M, K, op, us: time(ranks, bufs, op, M, job) });
      bufs.forEach((b, i) => Object.values(b).forEach((t) => ranks[i]!.dev.free(t.ptr, t.bytes)));
    }
  }
  return points;
}
