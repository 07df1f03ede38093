/**
 * Launcher of kernels/fp8-gemv.cu (see its header): block-FP8 decode GEMMs out[M, N] = x · W^T
 * for M ≤ 32 in GEMV form, a warp per 16 weight rows and K range streaming the codes straight
 * into registers, the K ranges of a block's warps added in the block; and the MoE's expert
 * GEMMs (fused gate|up + SwiGLU-OAI, down) on the same loop over moe_scan's tile table.
 */
import type { MoeOptions } from '../backend.js';
import { FP8_GEMV, FP8_GEMV_DOWN, FP8_GEMV_GU } from './gemm-kernels.js';
import { launchKernel } from './kernel-launch.js';
import type { MoePlan } from './moe-plan.js';
import type { OpContext } from './op-context.js';

/** The most token rows the kernel takes (4 tiles of 8). */
export const GEMV_MAX_M = 32;

/** Resident warps per SM the split aims at (the NF = 1 kernel's 125 registers allow 16). */
const WARPS_PER_SM = 16;

/** The weight operand: E4M3 codes, f32 scales per row and `group` inputs (group % 128 == 0). */
export interface GemvOperand {
  readonly ptr: number;
  readonly scales: number;
  readonly group: number;
}

/**
 * Warps per block (each sums a K range of the block's 16 rows): as many as keep every warp of
 * the GPU busy in one wave when the 16-row blocks alone do not, at most 16 and one 128-input
 * tile per warp; 1 when the blocks fill the GPU (they then run in waves).
 */
export function gemvWarps(smCount: number, N: number, K: number): number {
  return warpsFor(smCount, Math.ceil(N / 16), K);
}

function warpsFor(smCount: number, blocks: number, K: number): number {
  return kRangesPerBlock(smCount * WARPS_PER_SM, blocks, 16, K);
}

/**
 * K ranges per block for a split-K decode GEMM of `blocks` row blocks: as many as fill `slots`
 * (resident K-range workers on the GPU) in one wave, at most `cap` and one 128-input tile per
 * range; 1 when the blocks alone fill the slots. fp8-wgmma.ts shares it (warpgroups as workers).
 */
export function kRangesPerBlock(slots: number, blocks: number, cap: number, K: number): number {
  if (blocks >= slots) return 1;
  return Math.max(1, Math.min(Math.floor(slots / blocks), cap, K / 128));
}

/** Benchmark knobs (kernel defines GV_U, GV_PF, GV_PIPE). */
export interface GemvTune {
  /** Tiles per buffer at 8 token rows (0: the kernel's default). */
  readonly u: number;
  readonly prefetch: boolean;
  /** Two register buffers, the next one loading during the current one's MMAs. */
  readonly pipe: boolean;
  /** 16-row weight tiles per warp sharing each x load (plain GEMM; 1 when absent). */
  readonly mt?: number;
  /** At most 8 warps per block, up to 255 registers a thread (GV_LB). */
  readonly lb?: boolean;
}

/**
 * The knobs matmul runs the kernel with, by measurement (skinny-bench on one H200, CUDA-graph
 * device ms at MiniMax-M3's decode shapes). Session 12 W3 (plain / tuned): up to 8 tokens two
 * register buffers (M = 8: q_proj 0.0204 / 0.0173, o 0.0220 / 0.0185, down 0.0305 / 0.0269, LM
 * head 0.371 / 0.337); 9 to 16 two 16-row tiles per warp with one tile per buffer (M = 16: q
 * 0.0333 / 0.0222, o 0.0334 / 0.0257, gate|up 0.0936 / 0.0552, down 0.0488 / 0.0368). W11, after
 * the plain GEMM's x loads lost their per-load select: the plain kernel caught up at 8 and 16
 * tokens (M = 16 q 0.0207 against 0.0205), and from 17 two buffers at up to 255 registers win
 * (M = 32, plain / tuned: q 0.0321 / 0.0268, o 0.0325 / 0.0279, gate|up 0.0961 / 0.0736, down
 * 0.0491 / 0.0409, LM head 0.634 / 0.511).
 */
export function gemvTuneFor(M: number): GemvTune {
  return M <= 8 ? TUNE_TO_8 : M <= 16 ? TUNE_TO_16 : TUNE_TO_32;
}
// One object each, so that their defines (gemvDefines) are made once and the kernel cache's
// per-defines key is computed once, not at every launch.
const TUNE_TO_8: GemvTune = { u: 0, prefetch: true, pipe: true };
const TUNE_TO_16: GemvTune = { u: 2, prefetch: true, pipe: false, mt: 2 };
const TUNE_TO_32: GemvTune = { u: 0, prefetch: true, pipe: true, lb: true };

/** The plain GEMM's -D values for `t` (fp8Gemv; the offline precompile's variants), one object per tune. */
export function gemvDefines(t: GemvTune): GemvDefines {
  let d = definesOf.get(t);
  if (!d) {
    d = {
      GV_U: t.u,
      GV_PF: t.prefetch ? 1 : 0,
      GV_PIPE: t.pipe ? 1 : 0,
      GV_MT: t.mt ?? 1,
      GV_LB: t.lb ? 1 : 0,
    };
    definesOf.set(t, d);
  }
  return d;
}
type GemvDefines = Readonly<Record<'GV_U' | 'GV_PF' | 'GV_PIPE' | 'GV_MT' | 'GV_LB', number>>;
const definesOf = new WeakMap<GemvTune, GemvDefines>();

/** True when the kernel takes the shape. */
export function gemvFits(M: number, K: number, group: number): boolean {
  return M >= 1 && M <= GEMV_MAX_M && K % 128 === 0 && group % 128 === 0;
}

/**
 * out[M, N] (bf16 or f32) = x[M, K] (bf16) · W^T on the GEMV kernel; false when the shape does
 * not suit it. `warps` overrides the warps per block, `tune` the kernel's knobs (benchmarks;
 * gemvTuneFor's otherwise).
 */
export function fp8Gemv(
  ctx: OpContext,
  out: number,
  outF32: boolean,
  x: number,
  w: GemvOperand,
  M: number,
  N: number,
  K: number,
  warps?: number,
  tune?: GemvTune,
): boolean {
  if (!gemvFits(M, K, w.group)) return false;
  const nf = M <= 8 ? 1 : M <= 16 ? 2 : 4;
  const t = tune ?? gemvTuneFor(M);
  const mt = t.mt ?? 1;
  const blocks = Math.ceil(N / (16 * mt));
  const maxWarps = mt > 1 || t.lb ? 8 : 16; // the kernel's launch bounds (GV_MAX_WARPS)
  const ks = Math.max(
    1,
    Math.min(warps ?? warpsFor(ctx.dev.smCount, blocks, K), maxWarps, K / 128),
  );
  launchKernel(
    ctx,
    FP8_GEMV,
    `fp8_gemv_${outF32 ? 'f' : 'b'}_${nf}`,
    {
      grid: [blocks, 1, 1],
      block: [32 * ks, 1, 1],
      smem: ks > 1 ? ks * mt * nf * 4 * 32 * 4 : 0,
      defines: gemvDefines(t),
    },
    { W: w.ptr, S: w.scales, G: w.group, x, M, N, K, out },
  );
  return true;
}

/** Token rows per MoE tile on the GEMV kernels: 8 / 16 / 32 by the mean rows per expert. */
export function gemvTileRows(slots: number, experts: number): 8 | 16 | 32 {
  const perExpert = slots / Math.max(1, Math.min(experts, slots));
  return perExpert <= 8 ? 8 : perExpert <= 16 ? 16 : 32;
}

/**
 * The MoE's gate|up + SwiGLU and down GEMMs on block-FP8 experts (tile table in `p`, tiles of
 * gemvTileRows rows): act = SwiGLU(x · gate^T, x · up^T), y = rw · act · down^T.
 */
export function fp8GemvMoe(
  ctx: OpContext,
  p: MoePlan,
  gu: GemvOperand,
  x: number,
  dn: GemvOperand,
  w: number,
  o: MoeOptions,
): void {
  const { buf: b, BT, D, I, Kw } = p;
  if (BT !== 8 && BT !== 16 && BT !== 32)
    throw new Error(`moe: no GEMV kernel for ${BT}-row tiles`);
  const tiles = {
    perm: b.perm,
    Kw,
    offsets: b.offsets,
    tileExpert: b.tileExpert,
    tileStart: b.tileStart,
    numTiles: b.numTiles,
  };
  const sms = ctx.dev.smCount;
  const shape = (cols: number, rows: number, K: number) => {
    const ks = warpsFor(sms, Math.ceil(cols / rows) * p.maxTiles, K);
    return {
      grid: [p.maxTiles, Math.ceil(cols / rows), 1] as const,
      block: [32 * ks, 1, 1] as const,
      smem: ks > 1 ? ks * BT * 64 : 0,
    };
  };
  launchKernel(ctx, FP8_GEMV_GU, `fp8_gemv_gu_${BT}`, shape(I, 8, D), {
    W: gu.ptr,
    S: gu.scales,
    G: gu.group,
    x,
    ...tiles,
    D,
    I,
    act: b.act,
    alpha: o.alpha,
    limit: o.limit,
  });
  launchKernel(ctx, FP8_GEMV_DOWN, `fp8_gemv_down_${BT}`, shape(D, 16, I), {
    W: dn.ptr,
    S: dn.scales,
    G: dn.group,
    act: b.act,
    ...tiles,
    I,
    D,
    y: b.y,
    rw: w,
  });
}
