/**
 * Launchers for kernels/skinny-gemm.cu and skinny-x.cu (see their headers): decode GEMMs out[M, N] = x · W^T
 * for M ≤ 64 on bf16 or FP8 weights, split over K when the column blocks alone do not fill
 * the GPU, and the MoE's FP8 expert GEMMs on the same loop. Block FP8 runs widened to bf16
 * in registers (w8a16), on the E4M3 tensor cores (q8: x is first split exactly into two
 * E4M3 terms, skinny_split_x, and the codes go to the MMA as they are) or widened to f16 by
 * the hardware conversion against x scaled to f16 (h8: skinny_half_x first): fp8DenseKernel and
 * fp8MoeKernel choose by size.
 */
import type { Fp8DecodeChoice } from './kernel-tuning.js';
import type { MoeOptions } from '../backend.js';
import type { CudaFp8Weight } from './cuda-fp8-weight.js';
import { fp8Gemv, GEMV_MAX_M } from './fp8-gemv.js';
import {
  SKINNY_DOWN,
  SKINNY_GEMM,
  SKINNY_GU,
  SKINNY_HALF,
  SKINNY_SPLIT,
  type SkinnyMoeWeight,
  type SkinnyWeight,
} from './gemm-kernels.js';
import { launchKernel } from './kernel-launch.js';
import type { MoePlan } from './moe-plan.js';
import type { OpContext } from './op-context.js';

const ROW_BYTES = 128;
const SMEM_PER_SM = 227 * 1024;

/**
 * The weight operand: bf16 rows, or FP8 codes with their scales ('v8': block FP8 on
 * fp8-gemv.cu's GEMV kernel, dense only).
 */
export interface SkinnyOperand {
  readonly kind: SkinnyWeight | 'v8';
  readonly ptr: number;
  readonly scales: number;
  readonly group: number;
}

export function bf16Operand(ptr: number): SkinnyOperand {
  return { kind: 'b', ptr, scales: 0, group: 1 };
}

/**
 * Block FP8's decode kernel: 'q8' (the codes on the E4M3 tensor cores against the split x),
 * 'w8a16' (the codes widened to bf16 in registers by bit placement), 'h8' (widened to f16 by
 * the hardware conversion, f16 MMA against x scaled to f16) or 'v8' (w8a16's arithmetic in
 * fp8-gemv.cu's GEMV form: no shared-memory stages, a warp per 16 rows streaming long runs).
 * MXFP8 is always widened to bf16 on the skinny loop.
 */
export const FP8_DECODE_KERNELS = ['q8', 'w8a16', 'h8', 'v8'] as const;
export type Fp8DecodeKernel = (typeof FP8_DECODE_KERNELS)[number];

/**
 * The kernel that matmul runs block FP8 on for M tokens of a weight of `weightBytes` codes, by
 * measurement. Session 6 W2 (skinny-bench on one H200, MiniMax-M3 shapes, CUDA-graph device
 * time): w8a16 against h8 at M = 8 (178 against 188 µs a dense layer: h8 adds its x scaling),
 * h8 up to 32 (247 against 256 µs), w8a16 beyond (LM head M = 64: 0.765 against 0.808 ms); q8
 * slower at every M. v8 (fp8-gemv.cu, GEMV form, with gemvTuneFor's knobs) up to 16 tokens
 * and, at 17 to 32, on weights up to V8_MAX_BYTES: session 12 W3 skinny-bench (ms, v8 tuned /
 * session 11's w8a16): M = 8 q 0.0173 / 0.0302, gate|up 0.0472 / 0.0685, LM head 0.321 /
 * 0.434; M = 16 q 0.0222, o 0.0257, gate|up 0.053, down 0.037, LM head 0.389; M = 32 q 0.0307 /
 * 0.0417, o 0.0331 / 0.0441, down 0.047 / 0.059, gate|up 0.083 / 0.088, but the LM head 0.574
 * / 0.507 (h8 there).
 */
export function fp8DenseKernel(
  M: number,
  weightBytes: number,
  choice: Fp8DecodeChoice = 'default',
): Fp8DecodeKernel {
  if (choice === 'v8' && M <= GEMV_MAX_M) return 'v8';
  if (M <= V8_MAX_TOKENS || (M <= GEMV_MAX_M && weightBytes <= V8_MAX_BYTES)) return 'v8';
  return M <= 32 ? 'h8' : 'w8a16';
}

/**
 * v8 (fp8-gemv.cu) for dense GEMMs of any size up to this many tokens (session 12 W3 above;
 * session 8 W5 chose it up to 8 by the whole decode step) and for MoE tiles up to 8 tokens
 * (session 8 W5: 3 + 5 layers 0.699 / 0.655 against 0.792 / 0.696 at B = 1 / 8).
 */
const V8_MAX_TOKENS = 16;
const V8_MOE_MAX_TOKENS = 8;
/** Above 16 tokens, v8 only on weights of at most this many code bytes (not the LM head's 1.2 GB). */
const V8_MAX_BYTES = 256e6;

/**
 * The kernel of block-FP8 MoE tiles for T tokens (same W2): h8 up to 64 tokens (MoE layer at
 * the real shape: T = 8 0.546 against 0.585 ms, T = 64 1.733 against 1.934), w8a16 beyond (T =
 * 2,048 prefill: 7.09 against 7.79 ms). 'v8' (the GEMV tiles) is opt-in until measured.
 */
export function fp8MoeKernel(T: number, choice: Fp8DecodeChoice = 'default'): Fp8DecodeKernel {
  if (choice === 'v8' && T <= 64) return 'v8';
  if (T <= V8_MOE_MAX_TOKENS) return 'v8';
  return T <= 64 ? 'h8' : 'w8a16';
}

/** The decode operand for an FP8 weight: block FP8 (128-input blocks) on `kernel`, MXFP8 widened. */
export function fp8Operand(w: CudaFp8Weight, kernel: Fp8DecodeKernel): SkinnyOperand {
  const op = fp8WidenOperand(w);
  const scaledX = kernel !== 'w8a16' && op.kind === 'blk' && op.group % 128 === 0;
  return scaledX ? { ...op, kind: kernel } : op;
}

/** An FP8 weight on the W8A16 kernels (codes widened to bf16 in registers): benchmarks, checks. */
export function fp8WidenOperand(w: CudaFp8Weight): SkinnyOperand {
  return { kind: w.flavour, ptr: w.ptr, scales: w.scales.ptr, group: w.scaling.group };
}

/** Inputs per pipeline stage (128 bytes of each weight row). */
function stageK(kind: SkinnyWeight): number {
  return kind === 'b' ? ROW_BYTES / 2 : ROW_BYTES;
}

/** True when the kernels take a weight of `kind` with K inputs (and its scale groups). */
export function skinnyFits(op: Pick<SkinnyOperand, 'kind' | 'group'>, K: number): boolean {
  if (op.kind === 'v8') return K % 128 === 0 && op.group % 128 === 0;
  if (K % stageK(op.kind) !== 0) return false;
  if (op.kind === 'blk' || op.kind === 'q8' || op.kind === 'h8') return op.group % 128 === 0;
  return op.kind === 'b' || op.group % 16 === 0;
}

/** 8-token tiles for M tokens. */
function tilesFor(M: number): 1 | 2 | 4 | 8 {
  return M <= 8 ? 1 : M <= 16 ? 2 : M <= 32 ? 4 : 8;
}

/** Dynamic shared memory of a block: STAGES x (128 weight rows + NF*8 token rows [+ x scales]). */
export function skinnySmem(kind: SkinnyWeight, nf: number, weightRows = 128): number {
  const stages = kind !== 'b' && nf === 8 ? 3 : 4;
  const xScales = kind === 'q8' || kind === 'h8' ? nf * 8 * 4 : 0;
  return stages * (weightRows * ROW_BYTES + nf * 8 * stageK(kind) * 2 + xScales);
}

/**
 * q8's activations: x [rows, K] (bf16) split into two E4M3 codes per input (128 hi then 128
 * lo per 128 inputs) and one power-of-two scale per 128 inputs, in workspace `name`.
 */
export function skinnySplitX(
  ctx: OpContext,
  name: string,
  x: number,
  rows: number,
  K: number,
): { xq: number; xs: number } {
  const groups = (rows * K) / 128;
  const xq = ctx.ws.get(`${name}.q`, rows * K * 2);
  const xs = ctx.ws.get(`${name}.s`, groups * 4);
  launchKernel(
    ctx,
    SKINNY_SPLIT,
    'skinny_split_x',
    { grid: [Math.ceil(groups / 8), 1, 1], block: [256, 1, 1] },
    { x, rows, K, xq, xs },
  );
  return { xq, xs };
}

/**
 * h8's activations: x [rows, K] (bf16) as f16 times a power of two per 128 inputs (exact where
 * |x| ≥ 2^-29 of its group's amax), and the powers of two, in workspace `name`.
 */
export function skinnyHalfX(
  ctx: OpContext,
  name: string,
  x: number,
  rows: number,
  K: number,
): { xq: number; xs: number } {
  const groups = (rows * K) / 128;
  const xh = ctx.ws.get(`${name}.h`, rows * K * 2);
  const xs = ctx.ws.get(`${name}.s`, groups * 4);
  launchKernel(
    ctx,
    SKINNY_HALF,
    'skinny_half_x',
    { grid: [Math.ceil(groups / 8), 1, 1], block: [256, 1, 1] },
    { x, rows, K, xh, xs },
  );
  return { xq: xh, xs };
}

/** x as the kernel of `kind` reads it: split (q8), scaled to f16 (h8), or as it is. */
function scaledX(
  ctx: OpContext,
  kind: SkinnyWeight,
  name: string,
  x: number,
  rows: number,
  K: number,
): { xq: number; xs: number } {
  if (kind === 'q8') return skinnySplitX(ctx, name, x, rows, K);
  if (kind === 'h8') return skinnyHalfX(ctx, name, x, rows, K);
  return { xq: x, xs: 0 };
}

/** Block slots of the GPU for a kernel of `kind` with NF token tiles. */
function blockSlots(smCount: number, kind: SkinnyWeight, nf: number): number {
  return smCount * Math.max(1, Math.floor(SMEM_PER_SM / (skinnySmem(kind, nf) + 1024)));
}

/**
 * Splits of K for token slices of `rows` (all M by default): as many as fill the GPU's block
 * slots with the column blocks x slices, at least 2 stages of K each, at most 32; 1 when
 * those already cover the slots. The last block of a column block sums S partials of rows x
 * 128 outputs with its 128 threads, rows·S reads each from L2: S ≤ 128/rows keeps that under
 * the weight stream's time (W1: k_proj M = 32 at S = 24 took 36 µs for 3 MB).
 */
export function skinnySplits(
  smCount: number,
  kind: SkinnyWeight,
  M: number,
  N: number,
  K: number,
  rows = M,
): number {
  const slots = blockSlots(smCount, kind, tilesFor(rows));
  const blocks = Math.ceil(N / 128) * Math.ceil(M / rows);
  const kt = K / stageK(kind);
  const reduceCap = Math.floor(128 / rows);
  return Math.max(1, Math.min(Math.floor(slots / blocks), 32, Math.floor(kt / 2), reduceCap));
}

/** Weights up to this size are sliced down to 8 rows (every slice reads them; L2 holds them). */
const SLICE_MAX_BYTES = 16 << 20;

/**
 * Token rows per block: all M, or slices of 32 / 16 / 8 rows when the column blocks x splits
 * of all M fill under a quarter of the block slots (k/v and index projections at M = 32-64:
 * 4 column blocks, split at most 128/M ways, were 8 blocks on a 132-SM GPU; W2: bf16 k_proj
 * M = 64 0.0726 -> 0.0153 ms). Larger weights (L2 holds only some of their reads twice) only
 * in two slices of 32, under half of the slots (W2, FP8 h8 at M = 64: q_proj 0.098 -> 0.063,
 * o_proj 0.116 -> 0.070, dense down 0.156 -> 0.093 ms; gate|up, 192 column blocks, and the LM
 * head were slower sliced and stay whole).
 */
export function skinnySliceRows(
  smCount: number,
  kind: SkinnyWeight,
  M: number,
  N: number,
  K: number,
): number {
  const small = N * K * (kind === 'b' ? 2 : 1) <= SLICE_MAX_BYTES;
  const share = small ? 4 : 2;
  let rows = M;
  for (const r of small ? [M, 32, 16, 8] : [M, 32]) {
    if (r > M) continue;
    rows = r;
    const blocks = Math.ceil(N / 128) * Math.ceil(M / r) * skinnySplits(smCount, kind, M, N, K, r);
    if (share * blocks >= blockSlots(smCount, kind, tilesFor(r))) break;
  }
  return rows;
}

/**
 * Dense out[M, N] = x[M, K] (bf16) · W[N, K]^T for M ≤ 64, bf16 or f32 out; false when the
 * shape does not suit the kernels. `splits` and `rows` (token rows per block) override the
 * split-K and slice choices (checks, benchmarks; `splits` alone: no slices).
 */
export function skinnyGemm(
  ctx: OpContext,
  out: number,
  outF32: boolean,
  x: number,
  w: SkinnyOperand,
  M: number,
  N: number,
  K: number,
  splits?: number,
  rows?: number,
): boolean {
  if (w.kind === 'v8') return fp8Gemv(ctx, out, outF32, x, w, M, N, K, splits);
  if (M < 1 || M > 64 || !skinnyFits(w, K)) return false;
  const sms = ctx.dev.smCount;
  const h = rows ?? (splits === undefined ? skinnySliceRows(sms, w.kind, M, N, K) : M);
  const nf = tilesFor(h);
  const slices = Math.ceil(M / h);
  const S = splits ?? skinnySplits(sms, w.kind, M, N, K, h);
  const colBlocks = Math.ceil(N / 128);
  const xin = scaledX(ctx, w.kind, 'skinny.x', x, M, K);
  let part = 0;
  let counters = 0;
  if (S > 1) {
    part = ctx.ws.get('skinny.part', S * M * N * 4);
    counters = ctx.ws.get('skinny.counters', colBlocks * slices * 4);
    // Every launch leaves its counters at 0; a fresh (or grown) buffer starts at 0 here.
    if (!ctx.dev.isCapturing) ctx.dev.memsetAsync(counters, 0, colBlocks * slices * 4);
  }
  launchKernel(
    ctx,
    SKINNY_GEMM,
    `skinny_${w.kind}_${outF32 ? 'f' : 'b'}_${nf}`,
    { grid: [colBlocks, slices, S], block: [128, 1, 1], smem: skinnySmem(w.kind, nf) },
    { W: w.ptr, S: w.scales, G: w.group, x: xin.xq, xs: xin.xs, M, N, K, out, part, counters },
  );
  return true;
}

/**
 * The MoE's fused gate|up + SwiGLU and down GEMMs on FP8 experts (tile table in `p`): block
 * FP8 on `kernel` (q8: x and the activations split first), MXFP8 widened.
 */
export function skinnyMoeGemms(
  ctx: OpContext,
  p: MoePlan,
  gu: CudaFp8Weight,
  x: number,
  dn: CudaFp8Weight,
  w: number,
  o: MoeOptions,
  kernel: Exclude<Fp8DecodeKernel, 'v8'>,
): void {
  skinnyMoeTiles(ctx, p, moeKind(gu, dn, kernel), fp8Args(gu), x, fp8Args(dn), w, o);
}

/**
 * bf16 experts [E, 2I, D] / [E, D, I] on the same tile loop (the alternative to moe.cu's
 * moe_mma_* kernels, BF16_MOE_TILES).
 */
export function skinnyMoeGemmsBf16(
  ctx: OpContext,
  p: MoePlan,
  gu: number,
  x: number,
  dn: number,
  w: number,
  o: MoeOptions,
): void {
  const none = { S: 0, G: 1 };
  skinnyMoeTiles(ctx, p, 'b', { W: gu, ...none }, x, { W: dn, ...none }, w, o);
}

function skinnyMoeTiles(
  ctx: OpContext,
  p: MoePlan,
  kind: SkinnyMoeWeight,
  gu: { W: number; S: number; G: number },
  x: number,
  dn: { W: number; S: number; G: number },
  w: number,
  o: MoeOptions,
): void {
  const { buf: b, BT, D, I, Kw, T, n } = p;
  if (p.maxTiles > 65535)
    throw new Error(`moe: ${p.maxTiles} tiles exceed the grid limit; split the batch`);
  const rows = tileRows(BT);
  const tiles = {
    perm: b.perm,
    Kw,
    offsets: b.offsets,
    tileExpert: b.tileExpert,
    tileStart: b.tileStart,
    numTiles: b.numTiles,
  };
  const smem = skinnySmem(kind, BT / 8);
  const xin = scaledX(ctx, kind, 'moe.x', x, T, D);
  launchKernel(
    ctx,
    SKINNY_GU,
    `skinny_gu_${kind}_${rows}`,
    { grid: [Math.ceil(I / 64), p.maxTiles, 1], block: [128, 1, 1], smem },
    {
      ...gu,
      x: xin.xq,
      xs: xin.xs,
      ...tiles,
      D,
      I,
      act: b.act,
      alpha: o.alpha,
      limit: o.limit,
    },
  );
  const ain = scaledX(ctx, kind, 'moe.act', b.act, n, I);
  launchKernel(
    ctx,
    SKINNY_DOWN,
    `skinny_down_${kind}_${rows}`,
    { grid: [Math.ceil(D / 128), p.maxTiles, 1], block: [128, 1, 1], smem },
    { ...dn, act: ain.xq, xs: ain.xs, ...tiles, I, D, y: b.y, rw: w },
  );
}

/** Both expert weights' kernel kind (q8 and h8 need both in block FP8 of 128-input blocks). */
function moeKind(gu: CudaFp8Weight, dn: CudaFp8Weight, kernel: Fp8DecodeKernel): SkinnyMoeWeight {
  const a = fp8Operand(gu, kernel).kind;
  const b = fp8Operand(dn, kernel).kind;
  if (a !== b || a === 'b' || a === 'v8')
    throw new Error(`moe: FP8 experts of two kinds (${a}, ${b})`);
  return a;
}

function tileRows(BT: number): '16' | '32' | '64' {
  if (BT === 16 || BT === 32 || BT === 64) return `${BT}`;
  throw new Error(`moe: no FP8 kernel for tiles of ${BT} rows`);
}

function fp8Args(w: CudaFp8Weight): { W: number; S: number; G: number } {
  return { W: w.ptr, S: w.scales.ptr, G: w.scaling.group };
}
