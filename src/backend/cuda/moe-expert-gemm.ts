/**
 * The MoE expert GEMMs of a prefill batch as one cuBLAS GEMM per expert (kernels/moe-expert-gemm.cu
 * holds the gather and the weighted combine around them).
 *
 * Why: at prefill every expert holds tens to hundreds of token rows, where cuBLAS runs near the
 * GEMM rate and the tile kernels of moe.cu (built for decode: few rows per expert, capturable)
 * do not. The price is a host read of the per-expert row counts, so this path is never taken
 * while a CUDA graph is captured; `moeGemmPath` decides.
 *
 * Arithmetic: each output element is an fp32 dot product over bf16 operands (cuBLAS,
 * CUBLAS_COMPUTE_32F), gate|up stay fp32 into SwiGLU-OAI, whose result is rounded to bf16 once,
 * as in moe_mma_gu; the routing weight multiplies the fp32 down output in the combine, as
 * moe_mma_down's epilogue does. Only the order of the K-sums differs from the tile kernels.
 */
import type { MoeOptions } from '../backend.js';
import type { CublasGemm } from './cublas-gemm.js';
import { launchKernel } from './kernel-launch.js';
import { MOE_COMBINE_BF16Y, MOE_COMBINE_SCALED, MOE_GATHER_ROWS, SWIGLU } from './kernel-table.js';
import { strideGrid, type OpContext } from './op-context.js';

/**
 * How a batch's expert GEMMs run: the tile kernels (moe.cu), one cuBLAS GEMM per expert, or
 * (bf16 weights) one grouped cuBLAS GEMM for all experts' gate|up and one for their down.
 */
export type MoeGemmPath = 'tiles' | 'per-expert-cublas' | 'grouped-cublas';

/**
 * Token count from which a bf16 batch outside graph capture takes the per-expert cuBLAS path.
 * Chosen by `npm run bench:moe-gpu` (docs/benchmarks/moe-prefill.md, one H200, M3 expert shape):
 * the tile kernels win at 1,024 tokens (4.72 vs 5.29 ms), cuBLAS at 2,048 (5.58 vs 7.17 ms);
 * the lines cross near 1,300.
 */
export const MOE_CUBLAS_MIN_TOKENS = 1280;

export function moeGemmPath(
  T: number,
  tensorCores: boolean,
  capturing: boolean,
  grouped = false,
): MoeGemmPath {
  if (!tensorCores || capturing || T < MOE_CUBLAS_MIN_TOKENS) return 'tiles';
  return grouped ? 'grouped-cublas' : 'per-expert-cublas';
}

/** Device buffers of the permutation (moe-ops.ts `permute` filled them). */
export interface MoePermutation {
  readonly T: number;
  readonly D: number;
  readonly I: number;
  readonly E: number;
  readonly Kw: number;
  /** Token slots, T * Kw. */
  readonly n: number;
  /** [E + 1] i32: first permuted row of each expert. */
  readonly offsets: number;
  /** [n] i32: permuted row -> token slot. */
  readonly perm: number;
  /** [n] i32: token slot -> permuted row, or -1. */
  readonly slotRow: number;
  /** [n, I] bf16 activations. */
  readonly act: number;
  /** [n, max(2I, D)] f32: gate|up, then the down output. */
  readonly y: number;
}

export interface ExpertOperands {
  /**
   * Expert e's [2I, D] bf16 gate|up (gate rows 0..I, up rows I..2I) and [D, I] bf16 down
   * weights; called once per expert with rows, gate|up for all of them before any down. An
   * FP8 expert is dequantized into a reused buffer here (stream order keeps it safe).
   */
  readonly gateUpOf: (e: number) => number;
  readonly downOf: (e: number) => number;
  /** [T, D] bf16 input rows. */
  readonly x: number;
  /** [T, Kw] f32 routing weights. */
  readonly rw: number;
  /** [T, D] output and its type letter. */
  readonly out: number;
  readonly outLetter: 'b' | 'f';
  /**
   * True when every expert's gateUpOf/downOf pointer stays valid at once (stacked bf16 weights):
   * the GEMMs may then run grouped, two cuBLAS calls per layer instead of two per expert.
   */
  readonly grouped: boolean;
  /**
   * True when every expert's pointers stay valid at once (stacked weights, no reused
   * dequantization buffer): the per-expert GEMMs may then run concurrently on cuBLAS lanes.
   */
  readonly concurrent: boolean;
}

/** Rows per expert, read from the device (waits for the stream). */
export function expertOffsets(ctx: OpContext, p: MoePermutation): Int32Array {
  const off = new Int32Array(p.E + 1);
  ctx.dev.download(off, p.offsets);
  return off;
}

/**
 * The grouped GEMMs' operands: rows of each non-empty expert and, in one device buffer, the
 * pointer arrays of both GEMMs (gate|up: weights, gathered inputs, bf16 outputs; down: weights,
 * activations, bf16 outputs), uploaded once before either runs (the upload waits for the stream).
 */
function groupedProblems(
  ctx: OpContext,
  off: Int32Array,
  p: MoePermutation,
  w: ExpertOperands,
  xs: number,
): { rows: Int32Array; gateUp: number; down: number } {
  const { D, I, E } = p;
  const experts = Array.from({ length: E }, (_, e) => e).filter((e) => off[e + 1]! > off[e]!);
  const n = experts.length;
  const ptrs = new BigUint64Array(6 * n);
  experts.forEach((e, i) => {
    const r0 = off[e]!;
    ptrs[i] = BigInt(w.gateUpOf(e));
    ptrs[n + i] = BigInt(xs + r0 * D * 2);
    ptrs[2 * n + i] = BigInt(p.y + r0 * 2 * I * 2);
    ptrs[3 * n + i] = BigInt(w.downOf(e));
    ptrs[4 * n + i] = BigInt(p.act + r0 * I * 2);
    ptrs[5 * n + i] = BigInt(p.y + r0 * D * 2);
  });
  const buf = ctx.ws.get('moe.grouped.ptrs', Math.max(8, ptrs.byteLength));
  ctx.dev.upload(buf, ptrs);
  const rows = Int32Array.from(experts, (e) => off[e + 1]! - off[e]!);
  return { rows, gateUp: buf, down: buf + 3 * n * 8 };
}

export function perExpertCublasGemms(
  ctx: OpContext,
  gemm: CublasGemm,
  p: MoePermutation,
  w: ExpertOperands,
  o: MoeOptions,
): void {
  const { D, Kw, n } = p;
  const off = expertOffsets(ctx, p);
  const xs = ctx.ws.get('moe.xs', n * D * 2); // [n, D] bf16, rows grouped by expert
  launchKernel(
    ctx,
    MOE_GATHER_ROWS,
    'moe_gather_rows',
    { grid: [n, 1, 1], block: [128, 1, 1] },
    { xs, x: w.x, perm: p.perm, Kw, D },
  );
  if (w.grouped) groupedGemms(ctx, gemm, p, w, o, groupedProblems(ctx, off, p, w, xs));
  else loopGemms(ctx, gemm, p, w, o, off, xs);
}

/**
 * Rows below which an expert's GEMM costs about the same as at this many rows: it is then
 * bound by reading the expert's weights (the H200's GEMM rate over its copy bandwidth is about
 * 190 FLOP per byte, and each weight element gives 2 FLOP per row over 2 bytes).
 */
const WEIGHT_BOUND_ROWS = 192;

/**
 * Experts with rows, each with its lane: longest first onto the least loaded lane (cost
 * max(rows, WEIGHT_BOUND_ROWS)). Round robin had put the shared expert (every token's row)
 * on lane 0 with a quarter of the routed ones: twice the others' rows at 2,048 and 8,192
 * tokens (session 6 W2: MoE 4.73 / 9.34 ms).
 */
export function laneOrder(off: Int32Array, lanes: number): { e: number; lane: number }[] {
  const experts: number[] = [];
  for (let e = 0; e + 1 < off.length; e++) if (off[e + 1]! > off[e]!) experts.push(e);
  const cost = (e: number) => Math.max(off[e + 1]! - off[e]!, WEIGHT_BOUND_ROWS);
  experts.sort((a, b) => cost(b) - cost(a) || a - b);
  const load = new Array<number>(lanes).fill(0);
  return experts.map((e) => {
    const lane = load.indexOf(Math.min(...load));
    load[lane]! += cost(e);
    return { e, lane };
  });
}

/**
 * cuBLAS lanes (streams) the per-expert loop spreads its GEMMs over. At prefill an expert's
 * GEMM has tens to hundreds of rows, under one wave of CTAs (2,048 tokens: ~64 rows, N 6144:
 * about 48 of 132 SMs busy), so one after another the experts' weights stream at ~60% of the
 * copy bandwidth (lead's W1 profile, 2026-12-02: MoE 5.91 ms at 2,048 tokens against 3.47 ms
 * for reading 14.6 GB once). The lane count is ctx.tuning.moeLanes (kernel-tuning.ts, default 4).
 *
 * `each(gemm, e)` for every expert with rows; with `concurrent` operands expert e's GEMMs go to
 * its cuBLAS lane (laneOrder; each writes only its own rows), joined before the next kernel.
 */
function forExperts(
  gemm: CublasGemm,
  moeLanes: number,
  off: Int32Array,
  concurrent: boolean,
  each: (g: (...a: Parameters<CublasGemm['gemm']>) => void, e: number) => void,
): void {
  if (!concurrent) {
    for (let e = 0; e + 1 < off.length; e++)
      if (off[e + 1]! > off[e]!) each((...a) => gemm.gemm(...a), e);
    return;
  }
  const lanes = gemm.fork(moeLanes);
  for (const { e, lane } of laneOrder(off, lanes.count)) each((...a) => lanes.gemm(lane, ...a), e);
  lanes.join();
}

/** One cuBLAS GEMM per expert and projection, f32 outputs (gate|up into SwiGLU unrounded). */
function loopGemms(
  ctx: OpContext,
  gemm: CublasGemm,
  p: MoePermutation,
  w: ExpertOperands,
  o: MoeOptions,
  off: Int32Array,
  xs: number,
): void {
  const { T, D, I, Kw, n } = p;
  const h = p.y; // gate|up [n, 2I] f32 and down [n, D] f32 never live at once
  forExperts(gemm, ctx.tuning.moeLanes, off, w.concurrent, (g, e) => {
    const r0 = off[e]!;
    g(
      h + r0 * 2 * I * 4,
      'f32',
      xs + r0 * D * 2,
      w.gateUpOf(e),
      'bf16',
      off[e + 1]! - r0,
      2 * I,
      D,
    );
  });
  launchKernel(
    ctx,
    SWIGLU,
    'swiglu_bf',
    { grid: strideGrid(ctx, n * I), block: [256, 1, 1] },
    { out: p.act, gu: h, M: n, I, alpha: o.alpha, limit: o.limit },
  );
  forExperts(gemm, ctx.tuning.moeLanes, off, w.concurrent, (g, e) => {
    const r0 = off[e]!;
    g(h + r0 * D * 4, 'f32', p.act + r0 * I * 2, w.downOf(e), 'bf16', off[e + 1]! - r0, D, I);
  });
  launchKernel(
    ctx,
    MOE_COMBINE_SCALED,
    `moe_combine_scaled_${w.outLetter}`,
    { grid: [T, 1, 1], block: [256, 1, 1] },
    { out: w.out, y: h, slotRow: p.slotRow, rw: w.rw, Kw, D },
  );
}

/**
 * Two grouped GEMMs (gate|up, down) over every non-empty expert. cuBLAS's grouped API writes
 * bf16 for bf16 operands (no f32 output), so gate|up and the down output are rounded to bf16
 * once more than on the per-expert loop (within the bf16 bound; moe-check measures it).
 */
function groupedGemms(
  ctx: OpContext,
  gemm: CublasGemm,
  p: MoePermutation,
  w: ExpertOperands,
  o: MoeOptions,
  g: { rows: Int32Array; gateUp: number; down: number },
): void {
  const { T, D, I, Kw, n } = p;
  gemm.grouped(g.gateUp, 'bf16', g.rows, 2 * I, D); // -> p.y as [n, 2I] bf16
  launchKernel(
    ctx,
    SWIGLU,
    'swiglu_bb',
    { grid: strideGrid(ctx, n * I), block: [256, 1, 1] },
    { out: p.act, gu: p.y, M: n, I, alpha: o.alpha, limit: o.limit },
  );
  gemm.grouped(g.down, 'bf16', g.rows, D, I); // -> p.y as [n, D] bf16
  launchKernel(
    ctx,
    MOE_COMBINE_BF16Y,
    `moe_combine_bf16y_${w.outLetter}`,
    { grid: [T, 1, 1], block: [256, 1, 1] },
    { out: w.out, y: p.y, slotRow: p.slotRow, rw: w.rw, Kw, D },
  );
}
