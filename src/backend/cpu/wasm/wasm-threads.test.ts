import { afterAll, describe, expect, it } from 'vitest';
import { layoutBatch, type ForwardBatch } from '../../forward-batch.js';
import { CpuKernels } from './cpu-kernels.js';
import { KERNEL } from './kernel-instances.js';
import type { ThreadPool } from './thread-pool.js';

function filled(k: CpuKernels, n: number, seed: number): Float32Array {
  const a = k.heap.f32(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    a[i] = s / 2 ** 31 - 0.5;
  }
  return a;
}

const kernels: CpuKernels[] = [];
const make = (threads: number): CpuKernels => {
  const k = new CpuKernels({ threads, adaptiveThreads: false });
  kernels.push(k);
  return k;
};
afterAll(() => kernels.forEach((k) => k.close()));

describe('CPU kernels on worker threads', () => {
  it.each([
    [1, 4096, 256], // split by columns
    [300, 40, 64], // few columns: split by rows
    [33, 1030, 128], // a column slice that is not whole 4-wide tiles
  ])('matmul M=%i N=%i K=%i: 1, 2 and 3 threads give the same bits', (M, N, K) => {
    const outs = [1, 2, 3].map((threads) => {
      const k = make(threads);
      const out = k.heap.f32(M * N);
      k.matmul(out, filled(k, M * K, 1), filled(k, N * K, 2), M, N, K);
      return Array.from(out);
    });
    expect(outs[1]).toEqual(outs[0]);
    expect(outs[2]).toEqual(outs[0]);
  });

  it('attention and MSA selection: 1 and 2 threads give the same bits', () => {
    const [S, H, Hkv, Dh, Di, P] = [16, 4, 2, 64, 64, 64];
    const o = { numIndexHeads: Hkv, indexDim: Di, topk: 4, initBlocks: 0, localBlocks: 1 };
    const results = [1, 2].map((threads) => {
      const k = make(threads);
      const batch: ForwardBatch = {
        tokenIds: new Int32Array(70),
        seqs: [
          { numCached: 0, numNew: 60, pageTable: Int32Array.from({ length: 4 }, (_, i) => 2 * i) },
          {
            numCached: 700,
            numNew: 10,
            pageTable: Int32Array.from({ length: 45 }, (_, i) => 9 + i),
          },
        ],
        pageSize: S,
        logitsFor: 'last',
      };
      const layout = layoutBatch(batch);
      const T = layout.numTokens;
      const blocks = k.heap.i32(Hkv * T * o.topk);
      k.msaSelect(blocks, filled(k, T * Hkv * Di, 3), filled(k, P * S * Di, 4), batch, layout, o);
      const base = {
        q: filled(k, T * H * Dh, 5),
        k: filled(k, P * S * Hkv * Dh, 6),
        v: filled(k, P * S * Hkv * Dh, 7),
      };
      const dims = { numHeads: H, numKvHeads: Hkv, headDim: Dh, scale: 0.125 };
      const dense = k.heap.f32(T * H * Dh);
      const sparse = k.heap.f32(T * H * Dh);
      k.attention({ ...base, ...dims, out: dense, blocks: null, topk: 0 }, batch, layout);
      k.attention({ ...base, ...dims, out: sparse, blocks, topk: o.topk }, batch, layout);
      return [Array.from(blocks), Array.from(dense), Array.from(sparse)];
    });
    expect(results[1]).toEqual(results[0]);
    expect(results[0]![0]!.filter((b) => b > 3).length).toBeGreaterThan(0);
  });

  it('a failing chunk throws on the caller instead of hanging, on whatever thread it ran', () => {
    const k = make(2);
    const bad = 2 ** 31; // beyond the heap: the worker's share traps
    const x = filled(k, 64 * 64, 1);
    const out = k.heap.f32(64 * 64);
    expect(() => k.matmul(out, x, x, 64, 64, 64)).not.toThrow();
    const pool = (k as unknown as { pool: ThreadPool }).pool;
    const job = pool.job();
    job.add(KERNEL.matmul, out.byteOffset, x.byteOffset, x.byteOffset, 1, 4, 64, 4, 4);
    job.add(KERNEL.matmul, bad, bad, bad, 64, 64, 64, 4, 64);
    expect(() => pool.run(job)).toThrow(/worker thread|out of bounds/); // whichever thread claimed it
    // the pool still works after a failed job
    expect(() => k.matmul(out, x, x, 64, 64, 64)).not.toThrow();
  });

  it('rejects a bad thread count and refuses work after close()', () => {
    expect(() => new CpuKernels({ threads: 0 })).toThrow(/CPU threads/);
    const k = new CpuKernels({ threads: 2 });
    k.close();
    k.close();
    const x = filled(k, 64 * 64, 1);
    expect(() => k.matmul(k.heap.f32(64 * 64), x, x, 64, 64, 64)).toThrow(/after close/);
  });
});
