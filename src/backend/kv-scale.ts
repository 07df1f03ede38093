import { f32ToE4m3, F8E4M3_TABLE } from '../tensor/dtype.js';
import type { Tensor } from '../tensor/tensor.js';

/**
 * What an f8e4m3 cache means by the code it stores for x (Backend.writeCache): the value of
 * E4M3(x / scale) times scale, with the division and the product in float32, as the GPU's
 * write_cache_8* kernels and the attention kernels compute it. Saturates at ±448 × scale.
 */
export function e4m3RoundTrip(x: number, scale: number): number {
  return Math.fround(F8E4M3_TABLE[f32ToE4m3(Math.fround(x / scale))]! * scale);
}

/** writeCache's scale rule: a positive finite scale for f8e4m3 caches, exactly 1 for others. */
export function checkCacheScale(cache: Tensor, scale: number): void {
  if (cache.dtype === 'f8e4m3') {
    if (!(scale > 0 && Number.isFinite(scale)))
      throw new Error(`writeCache: FP8 KV scale must be positive and finite (got ${scale})`);
  } else if (scale !== 1) {
    throw new Error(`writeCache: a ${cache.dtype} cache takes no scale (got ${scale})`);
  }
}
