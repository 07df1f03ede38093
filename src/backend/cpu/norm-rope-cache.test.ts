import { describe, expect, it, vi } from 'vitest';
import type { NormRopeCacheArgs } from '../backend.js';
import type { ForwardBatch } from '../forward-batch.js';
import { normRopeCacheSteps } from '../norm-rope-cache-steps.js';
import { CpuBackend } from './cpu-backend.js';
import type { Tensor } from '../../tensor/tensor.js';

/**
 * CpuBackend.normRopeCache runs rowops.wat's fused kernel: q, k and both caches must hold the
 * bits of the steps (rmsNorm, rope, writeCache one by one), with and without v, partial and
 * full RoPE, decode and prefill token layouts, on 1 and 2 threads with every kernel split.
 */
describe('CpuBackend.normRopeCache', () => {
  const S = 4;
  // two sequences: 3 cached + 5 new (pages 2, 0, 5) and 9 cached + 1 new (pages 1, 3, 4)
  const batch: ForwardBatch = {
    tokenIds: new Int32Array(6),
    seqs: [
      { numCached: 3, numNew: 5, pageTable: Int32Array.of(2, 0, 5) },
      { numCached: 9, numNew: 1, pageTable: Int32Array.of(1, 3, 4) },
    ],
    pageSize: S,
    logitsFor: 'last',
  };
  const T = 6;

  /** Every tensor of the op, filled from `seed`, for heads Hq/Hk of Dh. */
  function operands(b: CpuBackend, Hq: number, Hk: number, Dh: number, withV: boolean) {
    const t = (shape: number[], seed: number, scale = 1): Tensor => {
      const x = b.alloc(shape, 'f32');
      b.fillRandom(x, seed, scale);
      return x;
    };
    return {
      q: t([T, Hq * Dh], 1),
      k: t([T, Hk * Dh], 2),
      v: withV ? t([T, Hk * Dh], 3) : null,
      qNorm: t([Dh], 4, 0.5),
      kNorm: t([Dh], 5, 0.5),
      kCache: t([6, S, Hk * Dh], 6),
      vCache: withV ? t([6, S, Hk * Dh], 7) : null,
    };
  }

  const cases = [
    { Hq: 4, Hk: 2, Dh: 64, rotaryDim: 32, withV: true },
    { Hq: 2, Hk: 1, Dh: 16, rotaryDim: 16, withV: false },
    { Hq: 3, Hk: 3, Dh: 8, rotaryDim: 4, withV: true },
  ];
  for (const threads of [1, 2])
    for (const c of cases)
      it(`equals the steps (Hq ${c.Hq}, Hk ${c.Hk}, Dh ${c.Dh}, rotary ${c.rotaryDim}, v ${c.withV}, ${threads} thread${threads > 1 ? 's' : ''})`, () => {
        const b = new CpuBackend({ threads, minParallelFlops: 0 });
        try {
          const meta = b.prepareBatch(batch);
          const args = (o: ReturnType<typeof operands>): NormRopeCacheArgs => ({
            ...o,
            numQHeads: c.Hq,
            numKHeads: c.Hk,
            headDim: c.Dh,
            rotaryDim: c.rotaryDim,
            theta: 10000,
            eps: 1e-6,
            kScale: 1,
            vScale: 1,
          });
          const fused = operands(b, c.Hq, c.Hk, c.Dh, c.withV);
          const steps = operands(b, c.Hq, c.Hk, c.Dh, c.withV);
          const before = b.readF32(fused.kCache);
          const kernel = vi.spyOn(b.kernels, 'normRopeCache');
          b.normRopeCache(args(fused), meta);
          expect(kernel).toHaveReturnedWith(true); // the fused kernel ran, not the steps
          normRopeCacheSteps(b, args(steps), meta);
          for (const name of ['q', 'k', 'kCache', 'v', 'vCache'] as const) {
            const f = fused[name];
            const s = steps[name];
            if (!f || !s) continue;
            expect(Array.from(b.readF32(f)), name).toEqual(Array.from(b.readF32(s)));
          }
          // the new tokens' rows were written (slot 2·S + 3 = 11: token 0 of sequence 0)
          const row = c.Hk * c.Dh;
          const kc = b.readF32(fused.kCache);
          const k = b.readF32(fused.k);
          expect(Array.from(kc.subarray(11 * row, 12 * row))).toEqual(
            Array.from(k.subarray(0, row)),
          );
          expect(kc.subarray(11 * row, 12 * row)).not.toEqual(before.subarray(11 * row, 12 * row));
        } finally {
          b.close();
        }
      });
});
