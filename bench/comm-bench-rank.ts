/**
 * The timing loop of bench:comm for the ranks this process drives: all W ranks as streams
 * (one GPU, stream emulation) or its one rank (one process per rank). Each op is captured
 * `iters` times into one CUDA graph per rank, so the time is the GPU's (no host launch gaps);
 * a rep launches every rank's graph between CUDA events on that rank's stream and takes the
 * slowest rank; the median of `reps` is reported. Inputs are zeros: the kernels do the same
 * work whatever the values (correctness is test:gpu's job).
 */
import { kernelTuning } from '../src/backend/cuda/kernel-tuning.js';
import { addRmsNorm } from '../src/backend/cuda/elementwise-ops.js';
import type { CudaTensor } from '../src/backend/cuda/cuda-tensor.js';
import { CudaTensor as Tensor } from '../src/backend/cuda/cuda-tensor.js';
import type { CudaDevice } from '../src/backend/cuda/device.js';
import type { OpContext } from '../src/backend/cuda/op-context.js';
import { Workspace } from '../src/backend/cuda/workspace.js';
import type { CudaIpcCommunicator } from '../src/parallel/cuda-ipc/cuda-ipc-communicator.js';

export const BENCH_OPS = [
  'ar-one-shot',
  'ar-two-shot',
  'all-gather',
  'reduce-scatter',
  'unfused-ar-add-norm',
  'fused-ar-add-norm',
] as const;
export type BenchOp = (typeof BENCH_OPS)[number];

export interface BenchJob {
  readonly tokens: readonly number[];
  readonly hidden: number;
  readonly iters: number;
  readonly reps: number;
  readonly ops: readonly BenchOp[];
}

export interface BenchPoint {
  readonly op: BenchOp;
  readonly tokens: number;
  /** Median over reps of the slowest local rank's time per op, µs. */
  readonly us: number;
}

type Bufs = Record<'x' | 'src' | 'out' | 'r' | 'a' | 'w', CudaTensor>;

function alloc(dev: CudaDevice, shape: number[]): CudaTensor {
  const n = shape.reduce((p, d) => p * d, 1);
  const ptr = dev.malloc(n * 2, 'bench tensor');
  dev.memsetAsync(ptr, 0, n * 2);
  return new Tensor(shape, 'bf16', ptr, null);
}

function buffers(dev: CudaDevice, W: number, T: number, D: number): Bufs {
  const per = Math.ceil(T / W);
  return {
    x: alloc(dev, [T, D]),
    src: alloc(dev, [W * per, D]),
    out: alloc(dev, [W * per, D]),
    r: alloc(dev, [T, D]),
    a: alloc(dev, [T, D]),
    w: alloc(dev, [D]),
  };
}

function rowsView(t: CudaTensor, rows: number, D: number): CudaTensor {
  return new Tensor([rows, D], t.dtype, t.ptr, null);
}

/** Enqueues one `op` of this rank on its stream. */
function enqueue(
  op: BenchOp,
  c: CudaIpcCommunicator,
  ctx: OpContext,
  b: Bufs,
  T: number,
  D: number,
): void {
  const per = Math.ceil(T / c.worldSize);
  switch (op) {
    case 'ar-one-shot':
      return c.allReduce(b.x, 'one-shot');
    case 'ar-two-shot':
      return c.allReduce(b.x, 'two-shot');
    case 'all-gather':
      return c.allGather(b.out, rowsView(b.src, per, D));
    case 'reduce-scatter':
      return c.reduceScatter(rowsView(b.out, per, D), b.src);
    case 'unfused-ar-add-norm':
      c.allReduce(b.x);
      return addRmsNorm(ctx, b.a, b.r, b.x, b.w, 1e-6);
    case 'fused-ar-add-norm':
      return c.allReduceAddRmsNorm(b.a, b.r, b.x, b.w, 1e-6);
  }
}

function median(a: number[]): number {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)]!;
}

/**
 * Times every op of `job` for the ranks in `comms` (ctxs[i] drives comms[i]); with one rank per
 * process the caller's peers run the same loop, aligned by a barrier before each rep.
 */
export function benchRank(
  ctxOrCtxs: Pick<OpContext, 'dev' | 'kernels'> | readonly Pick<OpContext, 'dev' | 'kernels'>[],
  comms: readonly CudaIpcCommunicator[],
  job: BenchJob,
): BenchPoint[] {
  const ctxs = (Array.isArray(ctxOrCtxs) ? ctxOrCtxs : [ctxOrCtxs]).map(
    (c: Pick<OpContext, 'dev' | 'kernels'>) => ({
      ...c,
      ws: new Workspace(c.dev),
      tuning: kernelTuning(),
    }),
  );
  const D = job.hidden;
  const points: BenchPoint[] = [];
  for (const T of job.tokens) {
    const bufs = ctxs.map((c) => buffers(c.dev, comms[0]!.worldSize, T, D));
    for (const op of job.ops) {
      // Eager warm-up (loads kernels, sizes workspaces): every rank's collective before any
      // rank's add + norm, so no first launch waits behind a kernel spinning for a later rank.
      comms.forEach((c, i) =>
        enqueue(op === 'unfused-ar-add-norm' ? 'ar-one-shot' : op, c, ctxs[i]!, bufs[i]!, T, D),
      );
      if (op === 'unfused-ar-add-norm')
        ctxs.forEach((c, i) => addRmsNorm(c, bufs[i]!.a, bufs[i]!.r, bufs[i]!.x, bufs[i]!.w, 1e-6));
      ctxs.forEach((c) => c.dev.sync());
      const graphs = comms.map((c, i) =>
        ctxs[i]!.dev.capture(() => {
          for (let k = 0; k < job.iters; k++) enqueue(op, c, ctxs[i]!, bufs[i]!, T, D);
        }),
      );
      graphs.forEach((g) => g.launch());
      const events = ctxs.map((c) => [c.dev.createEvent(), c.dev.createEvent()] as const);
      const times: number[] = [];
      for (let rep = 0; rep < job.reps; rep++) {
        if (comms.length === 1) comms[0]!.barrier();
        else ctxs.forEach((c) => c.dev.sync());
        graphs.forEach((g, i) => {
          ctxs[i]!.dev.record(events[i]![0]);
          g.launch();
          ctxs[i]!.dev.record(events[i]![1]);
        });
        const ms = ctxs.map((c, i) => c.dev.elapsed(events[i]![0], events[i]![1]));
        times.push((Math.max(...ms) * 1000) / job.iters);
      }
      graphs.forEach((g) => g.destroy());
      events.forEach((e, i) => e.forEach((ev) => ctxs[i]!.dev.destroyEvent(ev)));
      points.push({ op, tokens: T, us: median(times) });
    }
    bufs.forEach((b, i) => Object.values(b).forEach((t) => ctxs[i]!.dev.free(t.ptr, t.bytes)));
  }
  return points;
}
