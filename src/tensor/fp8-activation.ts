import { f32ToE4m3, F8E4M3_TABLE } from './dtype.js';
import type { Fp8Scaling } from './fp8-weight.js';

/**
 * W8A8: where a GEMM on a block-FP8 weight quantizes its activations too, and how. This is a
 * property of the op (Backend.matmul, Backend.moe), stated here once for every backend: the
 * CPU reference quantizes exactly where the CUDA backend runs the FP8 tensor cores.
 *
 * How (DeepSeek-V3 / vLLM's per_token_group_quant_fp8, groups of 128): each row's 128-input
 * group gets the scale s = amax/448 in f32 (1 when the group is all zero) and the codes
 * E4M3(f32(x / s)), round to nearest even, saturating at ±448. The GEMM then means
 * Σ_k (code_x · s) · w over the weight's dequantized values: what the FP8 tensor cores compute
 * on both operands' codes with both operands' block scales.
 *
 * Where: block-FP8 weights with 128-input groups, K a multiple of 128 and N of 16 (cuBLASLt's
 * block-scaled FP8 GEMMs), from W8A8_MIN_ROWS rows (matmul: x's rows; moe: tokens). Decode
 * batches below it keep W8A16 (the weight codes widened, x in bf16): there the GEMMs are bound
 * by reading the weight, and quantizing x costs a kernel for no gain.
 */
export const W8A8_MIN_ROWS = 257;

export const W8A8_GROUP = 128;

const E4M3_MAX = 448;

/** True when a GEMM of `rows` rows on a weight [N, K] of `scaling` quantizes x (W8A8). */
export function w8a8Applies(
  scaling: Fp8Scaling | null | undefined,
  rows: number,
  N: number,
  K: number,
): boolean {
  return (
    scaling?.kind === 'block' &&
    scaling.group === W8A8_GROUP &&
    K % W8A8_GROUP === 0 &&
    N % 16 === 0 &&
    rows >= W8A8_MIN_ROWS
  );
}

/**
 * The MoE's rule: both expert weights (gate|up [E, 2I, D], down [E, D, I]) take W8A8 at T
 * tokens; x is quantized before gate|up, the SwiGLU output before down.
 */
export function w8a8MoeApplies(
  gateUp: Fp8Scaling | null | undefined,
  down: Fp8Scaling | null | undefined,
  T: number,
  D: number,
  I: number,
): boolean {
  return w8a8Applies(gateUp, T, 2 * I, D) && w8a8Applies(down, T, D, I);
}

/** A group's scale: amax/448 rounded to f32 (1 for an all-zero group). */
export function w8a8Scale(amax: number): number {
  return amax > 0 ? Math.fround(amax / E4M3_MAX) : 1;
}

/**
 * Codes [M, K] and scales [M, K/128] (row-major) of x [M, K]: the quantization the GPU's
 * kernel performs (checks compare it bit for bit).
 */
export function w8a8Quantize(
  x: Float32Array,
  K: number,
): { codes: Uint8Array; scales: Float32Array } {
  if (K % W8A8_GROUP !== 0) throw new Error(`w8a8: K = ${K} is not a multiple of 128`);
  const codes = new Uint8Array(x.length);
  const scales = new Float32Array(x.length / W8A8_GROUP);
  for (let g = 0; g < scales.length; g++) {
    const o = g * W8A8_GROUP;
    let amax = 0;
    for (let i = 0; i < W8A8_GROUP; i++) amax = Math.max(amax, Math.abs(x[o + i]!));
    const s = w8a8Scale(amax);
    scales[g] = s;
    for (let i = 0; i < W8A8_GROUP; i++) codes[o + i] = f32ToE4m3(Math.fround(x[o + i]! / s));
  }
  return { codes, scales };
}

/** x [M, K] replaced by its W8A8 values code · s (f32), what the GEMM multiplies (in place). */
export function w8a8Dequantize(x: Float32Array, K: number): Float32Array {
  if (K % W8A8_GROUP !== 0) throw new Error(`w8a8: K = ${K} is not a multiple of 128`);
  for (let o = 0; o < x.length; o += W8A8_GROUP) {
    let amax = 0;
    for (let i = 0; i < W8A8_GROUP; i++) amax = Math.max(amax, Math.abs(x[o + i]!));
    const s = w8a8Scale(amax);
    for (let i = 0; i < W8A8_GROUP; i++)
      x[o + i] = F8E4M3_TABLE[f32ToE4m3(Math.fround(x[o + i]! / s))]! * s;
  }
  return x;
}
