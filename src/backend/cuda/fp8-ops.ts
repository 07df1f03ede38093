/**
 * Launchers for kernels/fp8-gemm.cu (see its header): FP8 weights read as values
 * (dequantization for prefill and odd shapes, the embedding lookup) and block-FP8
 * quantization. The FP8 GEMMs are skinny-gemm.ts's.
 */
import type { CudaFp8Weight } from './cuda-fp8-weight.js';
import { launchKernel } from './kernel-launch.js';
import { FP8_DEQUANT, FP8_EMBEDDING, FP8_QUANTIZE } from './kernel-table.js';
import { strideGrid, type OpContext } from './op-context.js';

const F8_BK = 128;

/**
 * True when skinny-gemm.cu's FP8 kernels take `w` with K inputs: whole 128-input stages, and
 * scale groups that a stage's scale handling covers (block: multiples of 128; MX: of 16).
 */
export function fp8MmaFits(w: CudaFp8Weight, K: number): boolean {
  const g = w.scaling.group;
  return K % F8_BK === 0 && (w.scaling.kind === 'block' ? g % F8_BK === 0 : g % 16 === 0);
}

/** out (bf16 or f32, w's element count) = codes · scales: exact in f32, rounded once in bf16. */
export function fp8Dequantize(
  ctx: OpContext,
  out: number,
  outL: 'b' | 'f',
  w: CudaFp8Weight,
): void {
  const K = w.shape[w.shape.length - 1]!;
  const n = w.numel;
  launchKernel(
    ctx,
    FP8_DEQUANT,
    `fp8_dequant_${outL}_${w.flavour}`,
    { grid: strideGrid(ctx, n), block: [256, 1, 1] },
    { out, W: w.ptr, S: w.scales.ptr, n, K, G: w.scaling.group },
  );
}

/** out [T, D] (bf16 or f32) = rows `ids` [T] (device i32) of an FP8 table, code · scale. */
export function fp8Embedding(
  ctx: OpContext,
  out: number,
  outL: 'b' | 'f',
  w: CudaFp8Weight,
  ids: number,
  T: number,
): void {
  launchKernel(
    ctx,
    FP8_EMBEDDING,
    `fp8_embedding_${outL}_${w.flavour}`,
    { grid: [T, 1, 1], block: [256, 1, 1] },
    { out, W: w.ptr, S: w.scales.ptr, G: w.scaling.group, ids, D: w.shape[1]! },
  );
}

/**
 * Block FP8 of `matrices` bf16 [N, K] matrices at `src` (consecutive) into `codes` and
 * per-row scales [matrices·N, ceil(K/128)] (fp8-quantize.ts quantizeRows' arithmetic).
 */
export function fp8Quantize(
  ctx: OpContext,
  codes: number,
  scales: number,
  src: number,
  matrices: number,
  N: number,
  K: number,
): void {
  const Kg = Math.ceil(K / 128);
  for (let e = 0; e < matrices; e++) {
    launchKernel(
      ctx,
      FP8_QUANTIZE,
      'fp8_quantize_blk_b',
      { grid: [Kg, Math.ceil(N / 128), 1], block: [256, 1, 1] },
      { codes: codes + e * N * K, S: scales + e * N * Kg * 4, w: src + e * N * K * 2, N, K },
    );
  }
}
