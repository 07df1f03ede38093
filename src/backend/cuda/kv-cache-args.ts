/** What the tensor-core attention kernels take from the KV cache's dtype (--kv-cache-dtype). */
import type { AttentionOptions } from '../backend.js';
import type { CudaTensor } from './cuda-tensor.js';

/** -DKV_FP8 for the tensor-core kernels: 1 when the caches hold E4M3 codes. */
export function kvDefines<D extends object>(kc: CudaTensor, d: D): D & { KV_FP8: number } {
  return { ...d, KV_FP8: kc.dtype === 'f8e4m3' ? 1 : 0 };
}

/** The kernels' scale (softmax scale, times k_scale for FP8 caches) and value scale. */
export function kvScales(kc: CudaTensor, o: AttentionOptions): { scale: number; vScale: number } {
  if (kc.dtype !== 'f8e4m3') return { scale: o.scale, vScale: 1 };
  return { scale: o.scale * (o.kScale ?? 1), vScale: o.vScale ?? 1 };
}
