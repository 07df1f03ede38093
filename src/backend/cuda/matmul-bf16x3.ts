/**
 * out [M, N] = x [M, K] · w [N, K]^T for bf16 x and an f32 weight kept split (SplitF32Weight):
 * one bf16 tensor-core GEMM of x against the stacked parts [3N, K] into f32 p [M, 3N], then
 * out = (p1 + p2) + p3 per element (kernels/bf16x3.cu). Each bf16 × bf16 product is exact in
 * f32 and W1 + W2 + W3 = w, so this is the f32 product up to f32 summation order (cuBLAS's
 * fp32 accumulation over K, then the three sums): three times the f32 path's FLOPs (x
 * converted to f32, an f32 cuBLAS GEMM: 34 TFLOP/s at 8k rows) at the bf16 tensor-core rate
 * (GEMM ceiling about 790 TFLOP/s on an H200), and no f32 copy of x.
 */
import { DTYPE_BYTES } from '../../tensor/dtype.js';
import type { CublasGemm } from './cublas-gemm.js';
import type { CudaTensor } from './cuda-tensor.js';
import { letter } from './cuda-tensor.js';
import { launchKernel } from './kernel-launch.js';
import { SUM_BF16X3 } from './kernel-table.js';
import { strideGrid, type OpContext } from './op-context.js';
import type { SplitF32Weight } from './split-f32-weight.js';

/**
 * From this many rows the split path runs. Measured (`bench/router-bench.ts`, one H200,
 * session 12, CUDA-graph device time at [E = 128, D = 6144]): f32 path vs split path
 * M = 1 0.0060 vs 0.0077 ms, M = 8 0.0136 vs 0.0078, M = 64 0.0150 vs 0.0084, M = 256
 * 0.0251 vs 0.0090, M = 8192 0.374 vs 0.058 ms. At one row the f32 GEMV's single launch wins;
 * from 8 rows cuBLAS's f32 GEMM leaves its GEMV kernel and the split's bf16 GEMM is faster.
 * Rows 2 to 7 are not measured; they stay on the f32 path.
 */
export const BF16X3_MIN_ROWS = 8;

/** Whether `matmul` takes the split path for these operands. */
export function bf16x3Applies(w: SplitF32Weight, x: CudaTensor, M: number): boolean {
  return x.dtype === 'bf16' && M >= BF16X3_MIN_ROWS && w.stacked !== null;
}

/** The split path; the caller has checked shapes ([M, K] x, [M, N] out) and `bf16x3Applies` but M. */
export function matmulBf16x3(
  ctx: OpContext,
  gemm: CublasGemm,
  out: CudaTensor,
  x: CudaTensor,
  w: SplitF32Weight,
  M: number,
): void {
  const parts = w.stacked;
  if (!parts || x.dtype !== 'bf16')
    throw new Error('matmul bf16x3: needs bf16 x and a whole split weight');
  const [N, K] = w.shape as [number, number];
  const p = ctx.ws.get('matmul.bf16x3', M * 3 * N * DTYPE_BYTES.f32);
  gemm.gemm(p, 'f32', x.ptr, parts.ptr, 'bf16', M, 3 * N, K);
  const shape = { grid: strideGrid(ctx, M * N), block: [256, 1, 1] as const };
  const name = `sum_bf16x3_${letter(out, 'matmul bf16x3 out')}` as const;
  launchKernel(ctx, SUM_BF16X3, name, shape, { out: out.ptr, p, M, N });
}
