import type { Shape } from './shape.js';
import type { Tensor } from './tensor.js';

/**
 * How the E4M3 codes of an FP8 weight are scaled. Both keep one scale per weight row and
 * group of `group` consecutive inputs (so any row range of a weight is a weight again: fused
 * gate|up rows, tensor-parallel row slices, one expert of a stack):
 * - `block`: block FP8 (DeepSeek / MiniMax-M2 `weight_scale_inv`, vLLM `--quantization fp8`):
 *   float32 scale_inv per [128 rows, `group` inputs] block, stored repeated on each of the
 *   block's rows; value = code · scale.
 * - `mx`: MXFP8 (OCP MX): a UE8M0 exponent byte s per row and 32 inputs; value = code · 2^(s−127).
 */
export type Fp8Scaling =
  | { readonly kind: 'block'; readonly group: number }
  | { readonly kind: 'mx'; readonly group: number };

export const BLOCK_FP8: Fp8Scaling = { kind: 'block', group: 128 };
export const MXFP8: Fp8Scaling = { kind: 'mx', group: 32 };

/**
 * A weight kept in FP8 on the backend: the tensor itself holds the E4M3 codes (dtype
 * `f8e4m3`, shape [N, K] or [E, N, K]) and `scales` their scales ([..., N, ceil(K/group)],
 * f32 for `block`, u8 for `mx`). What an op on it computes is defined as the same op on the
 * dequantized weight code · scale in float32 (bf16 tensor-core math, fp32 accumulation):
 * the CPU backend, which dequantizes at load, is the reference.
 */
export interface Fp8Weight extends Tensor {
  readonly dtype: 'f8e4m3';
  readonly scales: Tensor;
  readonly scaling: Fp8Scaling;
}

export function isFp8Weight(t: Tensor): t is Fp8Weight {
  return t.dtype === 'f8e4m3' && 'scales' in t && 'scaling' in t;
}

/** Shape of the scale tensor of an FP8 weight of `shape`. */
export function fp8ScaleShape(shape: Shape, s: Fp8Scaling): number[] {
  const k = shape[shape.length - 1]!;
  return [...shape.slice(0, -1), Math.ceil(k / s.group)];
}
