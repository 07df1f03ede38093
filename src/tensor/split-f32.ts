import type { Tensor } from './tensor.js';

/**
 * An f32 weight that its backend also keeps as three bf16 parts summing to it (CUDA's bf16x3
 * router, backend/cuda/split-f32-weight.ts). Ops see the f32 tensor; memory reports count the
 * parts too.
 */
export interface SplitF32 extends Tensor {
  readonly dtype: 'f32';
  /** bf16 elements of the parts this tensor owns (0 for a view). */
  readonly partElements: number;
}

export function isSplitF32(t: Tensor): t is SplitF32 {
  return t.dtype === 'f32' && 'partElements' in t;
}
