/**
 * Per-op device time of one eager step: wraps the backend's op methods with CUDA events
 * (matmuls keyed by weight shape), runs `fn`, and returns milliseconds per op, largest first;
 * `profileTimeline` also says where the device waited between ops.
 */
import type { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import type { Tensor } from '../../src/tensor/tensor.js';

const OPS = [
  'embedding',
  'rmsNorm',
  'addRmsNorm',
  'matmul',
  'matmulMany',
  'add',
  'rope',
  'writeCache',
  'normRopeCache',
  'attention',
  'msaSelect',
  'swigluOai',
  'routerTopK',
  'moe',
  'gatherLogitRows',
] as const;

/** An op's key (matmuls by weight shape) and its start and end events. */
export type Mark = [string, unknown, unknown];

/** Runs `fn` with every op between two recorded events; the marks in call order. */
export async function recordOps(gpu: CudaBackend, fn: () => Promise<unknown>): Promise<Mark[]> {
  const dev = gpu.dev;
  const marks: Mark[] = [];
  const target = gpu as unknown as Record<string, (...a: unknown[]) => unknown>;
  const saved = new Map<string, (...a: unknown[]) => unknown>();
  for (const name of OPS) {
    const orig = target[name]!;
    saved.set(name, orig);
    target[name] = (...args: unknown[]) => {
      const a = dev.createEvent();
      const b = dev.createEvent();
      dev.record(a);
      const r = orig.apply(gpu, args);
      dev.record(b);
      const key = opKey(name, args);
      marks.push([key, a, b]);
      return r;
    };
  }
  try {
    await fn();
  } finally {
    for (const [name, orig] of saved) target[name] = orig;
  }
  dev.sync();
  return marks;
}

/** Matmuls by weight shape; matmulMany by its weights' rows and K. */
function opKey(name: string, args: unknown[]): string {
  if (name === 'matmul') return `matmul [${(args[2] as Tensor).shape.join('x')}]`;
  if (name !== 'matmulMany') return name;
  const ws = args[2] as Tensor[];
  return `matmulMany [${ws.map((w) => w.shape[0]).join('+')}x${ws[0]?.shape[1]}]`;
}

function totals(gpu: CudaBackend, marks: Mark[]): [string, number][] {
  const total = new Map<string, number>();
  for (const [k, a, b] of marks) total.set(k, (total.get(k) ?? 0) + gpu.dev.elapsed(a, b));
  return [...total.entries()].sort((x, y) => y[1] - x[1]);
}

export async function profileOps(
  gpu: CudaBackend,
  fn: () => Promise<unknown>,
): Promise<[string, number][]> {
  return totals(gpu, await recordOps(gpu, fn));
}

export interface Timeline {
  /** ms per op, largest first. */
  readonly ops: [string, number][];
  /** Sum of every op's time, and device time from the first op's start to the last op's end. */
  readonly sumMs: number;
  readonly spanMs: number;
  /** Host time of the whole profiled call. */
  readonly hostMs: number;
  /** The largest device gaps between one op's end and the next op's start. */
  readonly gaps: { after: string; before: string; index: number; ms: number }[];
}

/** As profileOps, plus the span, the host time and the largest gaps between ops. */
export async function profileTimeline(
  gpu: CudaBackend,
  fn: () => Promise<unknown>,
  topGaps = 8,
): Promise<Timeline> {
  const t0 = performance.now();
  const marks = await recordOps(gpu, fn);
  const hostMs = performance.now() - t0;
  const ops = totals(gpu, marks);
  const dev = gpu.dev;
  const gaps = marks.slice(1).map(([k, a], i) => ({
    after: marks[i]![0],
    before: k,
    index: i + 1,
    ms: dev.elapsed(marks[i]![2], a),
  }));
  gaps.sort((x, y) => y.ms - x.ms);
  const sumMs = ops.reduce((s, [, v]) => s + v, 0);
  const spanMs = marks.length ? dev.elapsed(marks[0]![1], marks[marks.length - 1]![2]) : 0;
  return { ops, sumMs, spanMs, hostMs, gaps: gaps.slice(0, topGaps) };
}
