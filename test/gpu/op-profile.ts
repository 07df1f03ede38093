/**
 * Per-op device time of one eager step: wraps the backend's op methods with CUDA events
 * (matmuls keyed by weight shape), runs `fn`, and returns milliseconds per op, largest first.
 */
import type { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import type { Tensor } from '../../src/tensor/tensor.js';

const OPS = [
  'embedding',
  'rmsNorm',
  'addRmsNorm',
  'matmul',
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

export async function profileOps(
  gpu: CudaBackend,
  fn: () => Promise<unknown>,
): Promise<[string, number][]> {
  const dev = gpu.dev;
  const marks: [string, unknown, unknown][] = [];
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
      const key = name === 'matmul' ? `matmul [${(args[2] as Tensor).shape.join('x')}]` : name;
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
  const total = new Map<string, number>();
  for (const [k, a, b] of marks) total.set(k, (total.get(k) ?? 0) + dev.elapsed(a, b));
  return [...total.entries()].sort((x, y) => y[1] - x[1]);
}
