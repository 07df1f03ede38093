/**
 * W8A8 on the CUDA backend (the rule: tensor/fp8-activation.ts): the dense prefill GEMM on a
 * block-FP8 weight as activation quantization (kernels/fp8-w8a8.cu) then cuBLASLt's
 * block-scaled FP8 matmul (lt-fp8-gemm.ts). The MoE's per-expert form is moe-w8a8.ts.
 *
 * A weight's scales in cuBLASLt's layout are made at its first W8A8 GEMM and kept with it
 * (freed with the weight): BLK128x128 (one scale per 128-row block, 1/128 of the per-row
 * scales) when every 128-row block shares its scales, as block FP8 defines them; otherwise
 * (a fused weight of parts not aligned to 128 rows) the per-row VEC128 layout. Deciding reads
 * a count back once per weight, so the first W8A8 GEMM of a weight must not be captured (the
 * decode graphs capture after an eager warm-up of the same step, which makes them).
 */
import { W8A8_GROUP } from '../../tensor/fp8-activation.js';
import { numel } from '../../tensor/shape.js';
import type { CudaFp8Weight } from './cuda-fp8-weight.js';
import type { CudaTensor } from './cuda-tensor.js';
import type { CudaDevice } from './device.js';
import { launchKernel } from './kernel-launch.js';
import { W8A8_QUANT, W8A8_WSCALES_BLK, W8A8_WSCALES_VEC } from './kernel-table.js';
import { ltRows, type LtFp8Gemm, type LtWeightScales } from './lt-fp8-gemm.js';
import { strideGrid, type OpContext } from './op-context.js';

/** A weight's scales as cuBLASLt reads them: `perMatrix` bytes per [N, K] matrix of a stack. */
export interface LtScales {
  readonly ptr: number;
  readonly mode: LtWeightScales;
  readonly perMatrix: number;
  readonly bytes: number;
}

const tables = new WeakMap<CudaFp8Weight, LtScales>();

/** Frees `w`'s cuBLASLt scale table, if it has one (CudaBackend.free). */
export function freeLtScales(dev: CudaDevice, w: CudaFp8Weight): void {
  const t = tables.get(w);
  if (t) dev.free(t.ptr, t.bytes);
  tables.delete(w);
}

/** `w`'s ([N, K] or a stack [E, N, K]) scales for cuBLASLt, made at first use. */
export function ltScales(ctx: OpContext, w: CudaFp8Weight): LtScales {
  let t = tables.get(w);
  if (t) return t;
  if (ctx.dev.isCapturing)
    throw new Error(
      "W8A8: a weight's first W8A8 GEMM reads its scale layout back, so it cannot be captured; run the step eagerly first",
    );
  const [N, K] = w.shape.slice(-2) as [number, number];
  const mats = numel(w.shape.slice(0, -2));
  const Kb = K / W8A8_GROUP;
  const NB = Math.ceil(N / 128);
  const kbp = Math.ceil(Kb / 4) * 4;
  const blkBytes = NB * kbp * 4;
  const blk = ctx.dev.malloc(mats * blkBytes, 'W8A8 weight scales');
  ctx.dev.memsetAsync(blk, 0, mats * blkBytes);
  const bad = ctx.ws.get('w8a8.bad', 4);
  ctx.dev.memsetAsync(bad, 0, 4);
  const n = mats * NB * Kb;
  const args = { out: blk, S: w.scales.ptr, N, Kb, mats };
  launchKernel(
    ctx,
    W8A8_WSCALES_BLK,
    'w8a8_wscales_blk',
    { grid: strideGrid(ctx, n), block: [256, 1, 1] },
    { ...args, kbp, bad },
  );
  const count = new Int32Array(1);
  ctx.dev.download(count, bad);
  if (count[0] === 0) t = { ptr: blk, mode: 'blk128', perMatrix: blkBytes, bytes: mats * blkBytes };
  else {
    ctx.dev.free(blk, mats * blkBytes);
    const vec = ctx.dev.malloc(mats * Kb * N * 4, 'W8A8 weight scales');
    launchKernel(
      ctx,
      W8A8_WSCALES_VEC,
      'w8a8_wscales_vec',
      { grid: strideGrid(ctx, mats * N * Kb), block: [256, 1, 1] },
      { out: vec, S: w.scales.ptr, N, Kb, mats },
    );
    t = { ptr: vec, mode: 'vec128', perMatrix: Kb * N * 4, bytes: mats * Kb * N * 4 };
  }
  tables.set(w, t);
  return t;
}

/**
 * x [M, K] bf16 quantized per row and 128 inputs into codes [M, K] and VEC128 scales
 * ([K/128][pitch]); with `offsets` and `poffsets` (the MoE's [E+1] expert row offsets, as they
 * are and padded to LT_ROWS rows per expert, on the device) into the padded row layout, one
 * scale block per expert (kernels/fp8-w8a8.cu).
 */
export function w8a8QuantizeX(
  ctx: OpContext,
  codes: number,
  scales: number,
  x: number,
  M: number,
  K: number,
  pitch: number,
  experts: { offsets: number; poffsets: number; E: number } = { offsets: 0, poffsets: 0, E: 0 },
): void {
  launchKernel(
    ctx,
    W8A8_QUANT,
    'w8a8_quant_b',
    { grid: [M, 1, 1], block: [128, 1, 1] },
    { codes, S: scales, x, M, K, pitch, ...experts },
  );
}

/**
 * out [M, N] (bf16 or f32) = Q(x) · w^T: x [M, K] bf16 quantized, then cuBLASLt. M not a
 * multiple of LT_ROWS: zero rows pad x, and the GEMM writes a workspace whose first M rows are
 * copied out (stream-ordered: capturable, as the quantizer and the GEMM are).
 */
export function w8a8Matmul(
  ctx: OpContext,
  lt: LtFp8Gemm,
  out: CudaTensor,
  x: number,
  w: CudaFp8Weight,
  M: number,
): void {
  const [N, K] = w.shape as [number, number];
  const Mp = ltRows(M);
  const x8 = ctx.ws.get('w8a8.x8', Mp * K);
  const xs = ctx.ws.get('w8a8.xs', ((Mp * K) / W8A8_GROUP) * 4);
  if (Mp > M) {
    ctx.dev.memsetAsync(x8 + M * K, 0, (Mp - M) * K);
    ctx.dev.memsetAsync(xs, 0, ((Mp * K) / W8A8_GROUP) * 4);
  }
  w8a8QuantizeX(ctx, x8, xs, x, M, K, Mp);
  const s = ltScales(ctx, w);
  const outType = out.dtype === 'f32' ? 'f32' : 'bf16';
  const bytes = outType === 'f32' ? 4 : 2;
  const dst = Mp > M ? ctx.ws.get('w8a8.out', Mp * N * bytes) : out.ptr;
  lt.matmul({ out: dst, outType, x8, xs, w8: w.ptr, ws: s.ptr, wMode: s.mode }, Mp, N, K);
  if (dst !== out.ptr) ctx.dev.copyAsync(out.ptr, dst, M * N * bytes);
}
