/**
 * Dense out[M, N] = x[M, K] . w[N, K]^T on the CUDA backend: small bf16 decode GEMMs on the
 * split-K streaming kernel (skinny-gemm.ts), FP8 weights on its FP8 variants (decode: block
 * FP8 on the E4M3 tensor cores, MXFP8 widened) or dequantized for cuBLAS (prefill), everything
 * else on cuBLAS, with the f32 router on bf16 activations converted first, or from
 * BF16X3_MIN_ROWS rows on a split router weight as one bf16 GEMM over its three parts
 * (matmul-bf16x3.ts).
 */
import { DTYPE_BYTES } from '../../tensor/dtype.js';
import { numel, shapeStr } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { CublasGemm, GemmType } from './cublas-gemm.js';
import { CudaFp8Weight } from './cuda-fp8-weight.js';
import { cuda, type CudaTensor } from './cuda-tensor.js';
import * as ew from './elementwise-ops.js';
import { fp8Dequantize } from './fp8-ops.js';
import { w8a8Matmul } from './fp8-w8a8.js';
import { ltFor } from './lt-fp8-gemm.js';
import { w8a8Applies } from '../../tensor/fp8-activation.js';
import { bf16Operand, fp8DenseKernel, fp8Operand, skinnyGemm } from './skinny-gemm.js';
import { BF16X3_MIN_ROWS, bf16x3Applies, matmulBf16x3 } from './matmul-bf16x3.js';
import type { OpContext } from './op-context.js';
import { SplitF32Weight } from './split-f32-weight.js';

export function matmul(
  ctx: OpContext,
  gemm: CublasGemm,
  out: Tensor,
  x: Tensor,
  w: Tensor,
  skinny: boolean,
): void {
  if (w instanceof CudaFp8Weight) {
    matmulFp8(ctx, gemm, out, x, w);
    return;
  }
  const [N, K] = w.shape as [number, number];
  const M = numel(x.shape) / K;
  if (!Number.isInteger(M) || x.shape[x.shape.length - 1] !== K)
    throw new Error(`matmul: x ${shapeStr(x.shape)} does not match w ${shapeStr(w.shape)}`);
  const o = cuda(out, 'matmul.out', ['bf16', 'f32'], [M, N]);
  const xi = cuda(x, 'matmul.x', ['bf16', 'f32']);
  const wi = cuda(w, 'matmul.w', ['bf16', 'f32']);
  if (wi instanceof SplitF32Weight && bf16x3Applies(wi, xi, M)) {
    matmulBf16x3(ctx, gemm, o, xi, wi, M);
    return;
  }
  let xp = xi.ptr;
  if (xi.dtype !== wi.dtype) {
    // Mixed operands (the f32 router on bf16 activations): convert x to w's type.
    xp = ctx.ws.get(`matmul.x.${wi.dtype}`, M * K * DTYPE_BYTES[wi.dtype]);
    ew.convert(
      ctx,
      xp,
      wi.dtype === 'f32' ? 'f' : 'b',
      xi.ptr,
      xi.dtype === 'f32' ? 'f' : 'b',
      M * K,
    );
  }
  const inType = wi.dtype as GemmType;
  if (inType === 'f32' && o.dtype === 'bf16') {
    const tmp = ctx.ws.get('matmul.out.f32', M * N * 4);
    gemm.gemm(tmp, 'f32', xp, wi.ptr, 'f32', M, N, K);
    ew.convert(ctx, o.ptr, 'b', tmp, 'f', M * N);
    return;
  }
  if (inType === 'bf16' && skinny && M <= BF16_SKINNY_MAX_M && N * K * 2 <= BF16_SKINNY_MAX_BYTES) {
    if (skinnyGemm(ctx, o.ptr, o.dtype === 'f32', xp, bf16Operand(wi.ptr), M, N, K)) return;
  }
  gemm.gemm(o.ptr, o.dtype as GemmType, xp, wi.ptr, inType, M, N, K);
}

/**
 * The least row count from which `matmul` gives a row the same bits whatever rows one call
 * takes: below it the decode kernels run, whose split of K depends on the row count (bf16 up
 * to 64 rows, FP8 up to 256 in slices of 64); from it cuBLAS, whose rows were bit-identical
 * across row counts at every shape gpu-check's GEMM-RS cases try (block FP8 from 257 rows is
 * cuBLASLt's W8A8 GEMM, whose row invariance no check has measured yet). A split f32
 * weight changes path (f32 GEMM, then bf16x3) at BF16X3_MIN_ROWS.
 */
export function matmulRowInvariantFrom(w: Tensor, skinny: boolean): number {
  if (w instanceof CudaFp8Weight) return FP8_SKINNY_MAX_M + 1;
  if (w instanceof SplitF32Weight) return BF16X3_MIN_ROWS;
  const [N, K] = w.shape as [number, number];
  if (w.dtype === 'bf16' && skinny && N * K * 2 <= BF16_SKINNY_MAX_BYTES)
    return BF16_SKINNY_MAX_M + 1;
  return 1;
}

/**
 * bf16 decode GEMMs up to this many weight bytes (k/v projections: 6.3 MB, a handful of
 * column blocks that split-K spreads over the GPU) run on the split-K kernel; larger ones on
 * cuBLAS, which streams bf16 faster at every decode M (W1's skinny-bench: LM head M = 1
 * 0.603 vs 0.666 ms, dense gate|up M = 32 0.088 vs 0.128 ms).
 */
const BF16_SKINNY_MAX_BYTES = 16 << 20;

/** bf16 decode GEMMs up to this many rows run on the split-K kernel. */
const BF16_SKINNY_MAX_M = 64;

/**
 * x · w^T with an FP8 weight: M ≤ 256 (decode) on the FP8 skinny kernels (skinny-gemm.ts),
 * which reads the codes once per 64 rows; block FP8 from 257 rows in W8A8 (fp8-w8a8.ts:
 * x quantized, cuBLASLt's FP8 tensor cores; the rule is tensor/fp8-activation.ts's);
 * otherwise (MXFP8 prefill, shapes neither takes) w is dequantized to bf16 for cuBLAS.
 */
function matmulFp8(
  ctx: OpContext,
  gemm: CublasGemm,
  out: Tensor,
  x: Tensor,
  w: CudaFp8Weight,
): void {
  const [N, K] = w.shape as [number, number];
  const M = numel(x.shape) / K;
  if (w.shape.length !== 2 || !Number.isInteger(M) || x.shape[x.shape.length - 1] !== K)
    throw new Error(`matmul: x ${shapeStr(x.shape)} does not match w ${shapeStr(w.shape)}`);
  const o = cuda(out, 'matmul.out', ['bf16', 'f32'], [M, N]);
  const xi = cuda(x, 'matmul.x', ['bf16']);
  if (M <= FP8_SKINNY_MAX_M && fp8SkinnyRows(ctx, o, xi.ptr, w, M, N, K)) return;
  if (w8a8Applies(w.scaling, M, N, K)) {
    w8a8Matmul(ctx, ltFor(ctx.dev), o, xi.ptr, w, M);
    return;
  }
  const wb = ctx.ws.get('matmul.fp8.w', N * K * 2);
  fp8Dequantize(ctx, wb, 'b', w);
  gemm.gemm(o.ptr, o.dtype as GemmType, xi.ptr, wb, 'bf16', M, N, K);
}

/**
 * Up to this many rows the FP8 decode kernel runs in slices of 64 (reading the codes once per
 * slice: 4 slices read 4 bytes per weight, still under dequantize + cuBLAS's 5). One below
 * W8A8_MIN_ROWS (tensor/fp8-activation.ts), where block FP8 turns W8A8.
 */
const FP8_SKINNY_MAX_M = 256;

function fp8SkinnyRows(
  ctx: OpContext,
  o: CudaTensor,
  x: number,
  w: CudaFp8Weight,
  M: number,
  N: number,
  K: number,
): boolean {
  const f32 = o.dtype === 'f32';
  for (let r = 0; r < M; r += 64) {
    const m = Math.min(64, M - r);
    const op = fp8Operand(w, fp8DenseKernel(m, N * K, ctx.tuning.fp8Decode));
    const out = o.ptr + r * N * (f32 ? 4 : 2);
    if (!skinnyGemm(ctx, out, f32, x + r * K * 2, op, m, N, K)) return false;
  }
  return true;
}
