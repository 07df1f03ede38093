/** Launcher for kernels/norm-rope-cache.cu (see its header): an attention layer's input steps in one kernel. */
import type { NormRopeCacheArgs } from '../backend.js';
import { checkCacheScale } from '../kv-scale.js';
import type { CudaBatchMeta } from './batch-meta.js';
import { cuda, letter } from './cuda-tensor.js';
import { launchKernel } from './kernel-launch.js';
import { NORM_ROPE_CACHE, NORM_ROPE_CACHE_VARIANTS } from './kernel-table.js';
import type { OpContext } from './op-context.js';

type Variant = (typeof NORM_ROPE_CACHE_VARIANTS)[number];

/** Runs the fused kernel; false when no variant takes these dtypes (the caller runs the steps). */
export function normRopeCache(ctx: OpContext, a: NormRopeCacheArgs, meta: CudaBatchMeta): boolean {
  const T = meta.numTokens;
  const { numQHeads: Hq, numKHeads: Hk, headDim: Dh } = a;
  const q = cuda(a.q, 'normRopeCache.q', ['bf16', 'f32'], [T, Hq * Dh]);
  const k = cuda(a.k, 'normRopeCache.k', [q.dtype], [T, Hk * Dh]);
  const v = a.v ? cuda(a.v, 'normRopeCache.v', [q.dtype], [T, Hk * Dh]) : null;
  const qw = cuda(a.qNorm, 'normRopeCache.qNorm', ['bf16', 'f32'], [Dh]);
  const kw = cuda(a.kNorm, 'normRopeCache.kNorm', [qw.dtype], [Dh]);
  const kc = cuda(a.kCache, 'normRopeCache.kCache', ['bf16', 'f32', 'f8e4m3']);
  const vc = a.vCache ? cuda(a.vCache, 'normRopeCache.vCache', [kc.dtype], kc.shape) : null;
  if (kc.shape[kc.shape.length - 1] !== Hk * Dh)
    throw new Error(`normRopeCache: cache rows of ${kc.shape.at(-1)}, k rows of ${Hk * Dh}`);
  if ((v === null) !== (vc === null)) throw new Error('normRopeCache: v and vCache go together');
  checkCacheScale(kc, a.kScale);
  if (vc) checkCacheScale(vc, a.vScale);
  const c = kc.dtype === 'f8e4m3' ? '8' : letter(kc, 'normRopeCache');
  const variant = `${letter(q, 'normRopeCache')}${letter(qw, 'normRopeCache')}${c}`;
  if (!(NORM_ROPE_CACHE_VARIANTS as readonly string[]).includes(variant) || Dh > 1024) return false;
  launchKernel(
    ctx,
    NORM_ROPE_CACHE,
    `norm_rope_cache_${variant as Variant}`,
    { grid: [T, 1, 1], block: [256, 1, 1], smem: (a.rotaryDim + 8 * Dh) * 4 },
    {
      q: q.ptr,
      k: k.ptr,
      v: v?.ptr ?? 0,
      qw: qw.ptr,
      kw: kw.ptr,
      kc: kc.ptr,
      vc: vc?.ptr ?? 0,
      pos: meta.positions,
      slots: meta.slots,
      Hq,
      Hk,
      Dh,
      R: a.rotaryDim,
      theta: a.theta,
      eps: a.eps,
      kScale: a.kScale,
      vScale: a.vScale,
    },
  );
  return true;
}
