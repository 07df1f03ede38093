/**
 * Launcher of kernels/fp8-wgmma.cu (see its header): block-FP8 decode GEMMs out[M, N] = x · W^T
 * for M ≤ 32 on Hopper's warpgroup MMA, a warpgroup per 64 weight rows and K range widening the
 * codes into its A fragments, x read by the tensor cores from shared memory. sm_90 only (the
 * file is compiled for sm_90a).
 */
import { FP8_WG } from './gemm-kernels.js';
import { kRangesPerBlock, type GemvOperand } from './fp8-gemv.js';
import { launchKernel } from './kernel-launch.js';
import type { OpContext } from './op-context.js';

/** The most token rows the kernel takes (n = 32 columns). */
export const WG8_MAX_M = 32;

/** Resident warpgroups per SM the split aims at (512 threads of 128 registers fill one). */
const WARPGROUPS_PER_SM = 4;

/** True when the kernel takes the shape on this device. */
export function wg8Fits(ctx: OpContext, M: number, K: number, group: number): boolean {
  return ctx.dev.arch === 'sm_90' && M >= 1 && M <= WG8_MAX_M && K % 128 === 0 && group % 128 === 0;
}

/**
 * Warpgroups per block (each sums a K range of the block's 64 rows): as many as fill every SM's
 * 4 warpgroup slots in one wave when the 64-row blocks alone do not, at most 4 and one 128-input
 * tile per warpgroup.
 */
export function wg8Warpgroups(smCount: number, N: number, K: number): number {
  return kRangesPerBlock(smCount * WARPGROUPS_PER_SM, Math.ceil(N / 64), WARPGROUPS_PER_SM, K);
}

/**
 * out[M, N] (bf16 or f32) = x[M, K] (bf16) · W^T on the wgmma kernel; false when the shape or
 * device does not suit it. `warpgroups` overrides the K split (checks, benchmarks).
 */
export function fp8Wgmma(
  ctx: OpContext,
  out: number,
  outF32: boolean,
  x: number,
  w: GemvOperand,
  M: number,
  N: number,
  K: number,
  warpgroups?: number,
): boolean {
  if (!wg8Fits(ctx, M, K, w.group)) return false;
  const nf = M <= 8 ? 1 : M <= 16 ? 2 : 4;
  const ks = Math.max(
    1,
    Math.min(warpgroups ?? wg8Warpgroups(ctx.dev.smCount, N, K), WARPGROUPS_PER_SM, K / 128),
  );
  launchKernel(
    ctx,
    FP8_WG,
    `fp8_wg_${outF32 ? 'f' : 'b'}_${nf}`,
    { grid: [Math.ceil(N / 64), 1, 1], block: [128 * ks, 1, 1], smem: ks * 2 * nf * 2048 },
    { W: w.ptr, S: w.scales, G: w.group, x, M, N, K, out },
  );
  return true;
}
