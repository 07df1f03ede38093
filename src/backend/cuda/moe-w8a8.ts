/**
 * The MoE's expert GEMMs in W8A8 (the rule: tensor/fp8-activation.ts w8a8MoeApplies; prefill
 * batches): one cuBLASLt block-scaled FP8 GEMM per expert and projection, on lanes.
 *
 *   xs = x rows grouped by expert (moe_gather_rows)  -> Q(xs) codes + per-expert VEC128 scales,
 *        each expert's rows padded to a multiple of 4 (cuBLASLt's row counts; zero codes)
 *   gate|up [rows_e, 2I] bf16 = Q(xs_e) · gateUp_e^T          (per expert, cuBLASLt)
 *   act = SwiGLU-OAI(gate|up) bf16                   -> Q(act) codes + per-expert scales
 *   y [rows_e, D] bf16 = Q(act_e) · down_e^T                   (per expert, cuBLASLt)
 *   out[t] = Σ_j rw[t, j] · y[slot (t, j)]   (moe_combine_bf16y, slot order, padded rows)
 *
 * Each expert's codes are read once, as FP8 (against the tile kernels' once per 64-row tile,
 * or dequantizing to bf16 for cuBLAS: 5 bytes moved per weight). gate|up and y are bf16 (the
 * grouped bf16 path rounds the same two), within the op check's bf16 bound. The row counts are
 * read on the host, so this never runs in a captured step (CudaBackend.moeCapturable says so).
 */
import type { MoeOptions } from '../backend.js';
import { W8A8_GROUP } from '../../tensor/fp8-activation.js';
import type { CudaFp8Weight } from './cuda-fp8-weight.js';
import { ltScales, w8a8QuantizeX } from './fp8-w8a8.js';
import { launchKernel } from './kernel-launch.js';
import { MOE_COMBINE_BF16Y, MOE_GATHER_ROWS, SWIGLU, W8A8_PAD_ROWS } from './kernel-table.js';
import { ltRows, type LtFp8Gemm, type LtOperands } from './lt-fp8-gemm.js';
import { expertOffsets, laneOrder, type MoePermutation } from './moe-expert-gemm.js';
import { strideGrid, type OpContext } from './op-context.js';

export interface W8a8MoeIo {
  /** [T, D] bf16 input rows, [T, Kw] f32 routing weights, [T, D] output and its type letter. */
  readonly x: number;
  readonly rw: number;
  readonly out: number;
  readonly outLetter: 'b' | 'f';
}

/**
 * Row offsets padded to LT_ROWS rows per expert (cuBLASLt's row counts), on the host and in
 * a device workspace (uploaded: this path already reads the counts on the host).
 */
function paddedOffsets(ctx: OpContext, off: Int32Array): { host: Int32Array; dev: number } {
  const host = new Int32Array(off.length);
  for (let e = 0; e + 1 < off.length; e++) host[e + 1] = host[e]! + ltRows(off[e + 1]! - off[e]!);
  const dev = ctx.ws.get('moe.w8a8.poffsets', host.byteLength);
  ctx.dev.upload(dev, host);
  return { host, dev };
}

/** One projection for every expert with rows: out_e = Q(in_e) · w_e^T, on the lanes. */
function expertGemms(
  ctx: OpContext,
  lt: LtFp8Gemm,
  poff: Int32Array,
  w: CudaFp8Weight,
  src: { codes: number; scales: number },
  out: number,
): void {
  const [, N, K] = w.shape as [number, number, number];
  const s = ltScales(ctx, w);
  const lanes = lt.fork(ctx.tuning.moeLanes);
  for (const { e, lane } of laneOrder(poff, lanes.count)) {
    const r0 = poff[e]!;
    const rows = poff[e + 1]! - r0;
    const p: LtOperands = {
      out: out + r0 * N * 2,
      outType: 'bf16',
      x8: src.codes + r0 * K,
      xs: src.scales + (K / W8A8_GROUP) * r0 * 4,
      w8: w.ptr + e * N * K,
      ws: s.ptr + e * s.perMatrix,
      wMode: s.mode,
    };
    lanes.matmul(lane, p, rows, N, K);
  }
  lanes.join();
}

export function w8a8MoeGemms(
  ctx: OpContext,
  lt: LtFp8Gemm,
  p: MoePermutation,
  gateUp: CudaFp8Weight,
  down: CudaFp8Weight,
  io: W8a8MoeIo,
  o: MoeOptions,
): void {
  const { T, D, I, E, Kw, n } = p;
  // The scale tables first: making one reads the device (once per weight).
  ltScales(ctx, gateUp);
  ltScales(ctx, down);
  const off = expertOffsets(ctx, p);
  const poff = paddedOffsets(ctx, off);
  const np = poff.host[E]!;
  const xs = ctx.ws.get('moe.w8a8.xs', n * D * 2);
  launchKernel(
    ctx,
    MOE_GATHER_ROWS,
    'moe_gather_rows',
    { grid: [n, 1, 1], block: [128, 1, 1] },
    { xs, x: io.x, perm: p.perm, Kw, D },
  );
  const W = Math.max(D, I);
  const q = {
    codes: ctx.ws.get('moe.w8a8.codes', np * W),
    scales: ctx.ws.get('moe.w8a8.scales', (np * W * 4) / W8A8_GROUP),
  };
  // Padding rows: zero codes, zero scales (their outputs are zeros nobody reads).
  ctx.dev.memsetAsync(q.codes, 0, np * D);
  ctx.dev.memsetAsync(q.scales, 0, (np * D * 4) / W8A8_GROUP);
  const experts = { offsets: p.offsets, poffsets: poff.dev, E };
  w8a8QuantizeX(ctx, q.codes, q.scales, xs, n, D, 0, experts);
  const y = ctx.ws.get('moe.w8a8.y', np * Math.max(D, 2 * I) * 2); // [np, 2I], then [np, D] bf16
  const act = ctx.ws.get('moe.w8a8.act', np * I * 2); // [np, I] bf16
  expertGemms(ctx, lt, poff.host, gateUp, q, y);
  launchKernel(
    ctx,
    SWIGLU,
    'swiglu_bb',
    { grid: strideGrid(ctx, np * I), block: [256, 1, 1] },
    { out: act, gu: y, M: np, I, alpha: o.alpha, limit: o.limit },
  );
  // act is in the padded layout already: offsets and padded offsets are the same.
  const padded = { offsets: poff.dev, poffsets: poff.dev, E };
  w8a8QuantizeX(ctx, q.codes, q.scales, act, np, I, 0, padded);
  expertGemms(ctx, lt, poff.host, down, q, y);
  const slotRow = ctx.ws.get('moe.w8a8.slotRow', n * 4);
  launchKernel(
    ctx,
    W8A8_PAD_ROWS,
    'w8a8_pad_rows',
    { grid: strideGrid(ctx, n), block: [256, 1, 1] },
    { out: slotRow, rows: p.slotRow, n, ...experts },
  );
  launchKernel(
    ctx,
    MOE_COMBINE_BF16Y,
    `moe_combine_bf16y_${io.outLetter}`,
    { grid: [T, 1, 1], block: [256, 1, 1] },
    { out: io.out, y, slotRow, rw: io.rw, Kw, D },
  );
}
