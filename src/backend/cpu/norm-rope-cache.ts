import type { BatchMeta, NormRopeCacheArgs } from '../backend.js';
import type { BatchLayout } from '../forward-batch.js';
import { checkCacheScale } from '../kv-scale.js';
import { f32 } from './cpu-tensor.js';
import type { RopeTable } from './ops/rope.js';
import type { CpuKernels } from './wasm/cpu-kernels.js';

/**
 * Backend.normRopeCache on the CPU in one kernel job (rowops.wat norm_rope_cache): the q/k
 * norms, RoPE and cache writes of every token in one pass instead of six backend calls. False
 * (nothing done) where the kernel does not apply (an f8e4m3 cache keeps each value's E4M3
 * round trip; operands outside the heap; odd shapes): the caller then runs the steps.
 */
export function fusedNormRopeCache(
  kernels: CpuKernels,
  a: NormRopeCacheArgs,
  meta: BatchMeta,
  layout: BatchLayout,
  rope: RopeTable,
): boolean {
  if (a.kCache.dtype === 'f8e4m3' || a.vCache?.dtype === 'f8e4m3') return false;
  if ((a.v === null) !== (a.vCache === null))
    throw new Error('normRopeCache: v and vCache go together');
  const T = meta.numTokens;
  const { numQHeads: Hq, numKHeads: Hk, headDim: Dh } = a;
  checkCacheScale(a.kCache, a.kScale);
  if (a.vCache) checkCacheScale(a.vCache, a.vScale);
  const kCache = f32(a.kCache, 'normRopeCache.kCache');
  if (a.kCache.shape[a.kCache.shape.length - 1] !== Hk * Dh)
    throw new Error(`normRopeCache: cache rows of ${a.kCache.shape.at(-1)}, k rows of ${Hk * Dh}`);
  return kernels.normRopeCache(
    {
      q: f32(a.q, 'normRopeCache.q', [T, Hq * Dh]),
      k: f32(a.k, 'normRopeCache.k', [T, Hk * Dh]),
      v: a.v ? f32(a.v, 'normRopeCache.v', [T, Hk * Dh]) : null,
      qNorm: f32(a.qNorm, 'normRopeCache.qNorm', [Dh]),
      kNorm: f32(a.kNorm, 'normRopeCache.kNorm', [Dh]),
      kCache,
      vCache: a.vCache ? f32(a.vCache, 'normRopeCache.vCache', a.kCache.shape) : null,
      numQHeads: Hq,
      numKHeads: Hk,
      headDim: Dh,
      rotaryDim: a.rotaryDim,
      eps: a.eps,
    },
    meta.batch,
    layout,
    rope,
  );
}
