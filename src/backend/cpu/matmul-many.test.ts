import { describe, expect, it } from 'vitest';
import { CpuBackend } from './cpu-backend.js';
import type { Tensor } from '../../tensor/tensor.js';

/**
 * matmulMany is one thread-pool job for several weights of one K: each output must be the
 * bits of its own matmul, packed bf16 panels (N % 8 = 0), row-major bf16 (N = 12) and float32
 * weights alike, on 1 and 2 threads with every kernel split.
 */
describe('CpuBackend.matmulMany', () => {
  const K = 64;
  const shapes: [number, 'bf16' | 'f32'][] = [
    [128, 'bf16'],
    [64, 'bf16'],
    [12, 'bf16'],
    [40, 'f32'],
  ];
  for (const threads of [1, 2])
    for (const M of [1, 7, 32])
      it(`equals matmul one by one (M ${M}, ${threads} thread${threads > 1 ? 's' : ''})`, () => {
        const b = new CpuBackend({ threads, minParallelFlops: 0 });
        try {
          const x = b.alloc([M, K], 'f32');
          b.fillRandom(x, 1, 1);
          const ws = shapes.map(([N, dtype], i) => {
            const w = b.alloc([N, K], dtype);
            b.fillRandom(w, 10 + i, 0.2);
            return w;
          });
          const one = ws.map((w) => {
            const o = b.alloc([M, w.shape[0]!], 'f32');
            b.matmul(o, x, w);
            return b.readF32(o);
          });
          const outs: Tensor[] = ws.map((w) => b.alloc([M, w.shape[0]!], 'f32'));
          b.matmulMany(outs, x, ws);
          outs.forEach((o, i) => {
            const got = b.readF32(o);
            expect(got.some((v) => v !== 0)).toBe(true);
            expect(Array.from(got)).toEqual(Array.from(one[i]!));
          });
        } finally {
          b.close();
        }
      });
});
