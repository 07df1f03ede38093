/**
 * Device time of one call as it runs inside a decode step's graph (skinny-bench, router-bench).
 */
import type { CudaBackend } from '../src/backend/cuda/cuda-backend.js';
import { median } from '../test/gpu/check-util.js';

/**
 * f(0) … f(n-1) (each on its own weight copy, so that L2 holds none of the next one's bytes)
 * captured in one CUDA graph, replayed 10 times after a warm-up; the median replay over n.
 * Timing single eager launches instead measures the host's launch time for the small GEMMs
 * (W1: a ~20 µs floor).
 */
export function timeGraphMs(gpu: CudaBackend, n: number, f: (i: number) => void): number {
  const dev = gpu.dev;
  for (let i = 0; i < n; i++) f(i); // sizes the workspaces outside capture
  const graph = dev.capture(() => {
    for (let i = 0; i < n; i++) f(i);
  });
  try {
    graph.launch();
    const ms: number[] = [];
    for (let r = 0; r < 10; r++) {
      const a = dev.createEvent();
      const b = dev.createEvent();
      dev.record(a);
      graph.launch();
      dev.record(b);
      ms.push(dev.elapsed(a, b));
    }
    return median(ms) / n;
  } finally {
    graph.destroy();
  }
}
