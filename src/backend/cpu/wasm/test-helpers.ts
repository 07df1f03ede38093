/** Test fixtures shared by the WASM attention tests (not imported by the backend). */
import type { ForwardBatch } from '../../forward-batch.js';
import type { CpuKernels } from './cpu-kernels.js';

/** n heap floats, uniform in [-1, 1) from a seeded LCG. */
export function filled(k: CpuKernels, n: number, seed: number): Float32Array {
  const a = k.heap.f32(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    a[i] = (s / 2 ** 31 - 0.5) * 2;
  }
  return a;
}

/** Sequences with shuffled page tables: (numCached, numNew) each, page size S. */
export function batchOf(seqs: [number, number][], S: number, numPages: number): ForwardBatch {
  const pages = Array.from({ length: numPages }, (_, i) => (i * 7 + 3) % numPages);
  let next = 0;
  return {
    tokenIds: new Int32Array(seqs.reduce((a, [, n]) => a + n, 0)),
    seqs: seqs.map(([numCached, numNew]) => {
      const len = Math.ceil((numCached + numNew) / S);
      const pageTable = Int32Array.from(pages.slice(next, next + len));
      next += len;
      return { numCached, numNew, pageTable };
    }),
    pageSize: S,
    logitsFor: 'last',
  };
}
