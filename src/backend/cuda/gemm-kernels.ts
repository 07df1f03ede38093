/**
 * Declarations of kernels/skinny-gemm.cu (see its header): the decode GEMMs on bf16 and FP8
 * weights with split-K, and the MoE's FP8 expert GEMMs on the same loop; and of
 * kernels/skinny-x.cu, their activation conversions (q8, h8). Re-exported by kernel-table.ts.
 */
import { kernel, variants } from './kernel-decl.js';

/**
 * Weight kinds of the dense kernels: bf16, block FP8 and MXFP8 widened to bf16 in registers
 * (W8A16), block FP8 on the E4M3 tensor cores against x split into two E4M3 terms (q8), and
 * block FP8 widened to f16 by the hardware conversion against x scaled to f16 (h8).
 */
export const SKINNY_WEIGHTS = ['b', 'blk', 'mx', 'q8', 'h8'] as const;
export type SkinnyWeight = (typeof SKINNY_WEIGHTS)[number];
/** 8-token MMA tiles per block. */
export const SKINNY_NF = ['1', '2', '4', '8'] as const;
const DENSE = SKINNY_WEIGHTS.flatMap((w) =>
  (['b', 'f'] as const).flatMap((o) => SKINNY_NF.map((nf) => `${w}_${o}_${nf}` as const)),
);
/** The MoE kernels' weight kinds (as SKINNY_WEIGHTS). */
export const SKINNY_MOE_WEIGHTS = ['b', 'blk', 'mx', 'q8', 'h8'] as const;
export type SkinnyMoeWeight = (typeof SKINNY_MOE_WEIGHTS)[number];
const MOE = SKINNY_MOE_WEIGHTS.flatMap((f) =>
  (['16', '32', '64'] as const).map((bt) => `${f}_${bt}` as const),
);
const W = { W: 'ptr', S: 'ptr', G: 'i32' } as const;
const TILES = {
  offsets: 'ptr',
  tileExpert: 'ptr',
  tileStart: 'ptr',
  numTiles: 'ptr',
} as const;

export const SKINNY_GEMM = kernel({
  file: 'skinny-gemm',
  names: variants('skinny_', DENSE),
  args: {
    ...W,
    x: 'ptr',
    xs: 'ptr',
    M: 'i32',
    N: 'i32',
    K: 'i32',
    out: 'ptr',
    part: 'ptr',
    counters: 'ptr',
  },
  launch:
    'grid (ceil(N/128), ceil(M/rows), splits), block 128, dyn smem STAGES*(128*128+NF*8*XB [+NF*8*4 q8, h8])',
  // Streams its first weight stages while the previous kernel finishes (griddepcontrol).
  overlapsPrevious: true,
});
export const SKINNY_GU = kernel({
  file: 'skinny-gemm',
  names: variants('skinny_gu_', MOE),
  args: {
    ...W,
    x: 'ptr',
    xs: 'ptr',
    perm: 'ptr',
    Kw: 'i32',
    ...TILES,
    D: 'i32',
    I: 'i32',
    act: 'ptr',
    alpha: 'f32',
    limit: 'f32',
  },
  launch: 'grid (ceil(I/64), maxTiles), block 128, dyn smem STAGES*(128*128+BT*256)',
});
export const SKINNY_DOWN = kernel({
  file: 'skinny-gemm',
  names: variants('skinny_down_', MOE),
  args: {
    ...W,
    act: 'ptr',
    xs: 'ptr',
    perm: 'ptr',
    Kw: 'i32',
    ...TILES,
    I: 'i32',
    D: 'i32',
    y: 'ptr',
    rw: 'ptr',
  },
  launch: 'grid (ceil(D/128), maxTiles), block 128, dyn smem STAGES*(128*128+BT*256)',
});
export const SKINNY_SPLIT = kernel({
  file: 'skinny-x',
  names: ['skinny_split_x'],
  args: { x: 'ptr', rows: 'i32', K: 'i32', xq: 'ptr', xs: 'ptr' },
  launch: 'grid ceil(rows*K/128/8), block 256 (a warp per 128 inputs of a row)',
});
export const SKINNY_HALF = kernel({
  file: 'skinny-x',
  names: ['skinny_half_x'],
  args: { x: 'ptr', rows: 'i32', K: 'i32', xh: 'ptr', xs: 'ptr' },
  launch: 'grid ceil(rows*K/128/8), block 256 (a warp per 128 inputs of a row)',
});
/** kernels/fp8-gemv.cu: block-FP8 decode GEMMs in GEMV form (a warp per 16 rows and K range). */
export const FP8_GEMV = kernel({
  file: 'fp8-gemv',
  names: variants(
    'fp8_gemv_',
    (['b', 'f'] as const).flatMap((o) =>
      (['1', '2', '4'] as const).map((nf) => `${o}_${nf}` as const),
    ),
  ),
  args: { W: 'ptr', S: 'ptr', G: 'i32', x: 'ptr', M: 'i32', N: 'i32', K: 'i32', out: 'ptr' },
  launch:
    'grid (ceil(N/(16*GV_MT))), block 32*KS (KS 1..16, 8 with GV_MT > 1 or GV_LB), dyn smem KS*GV_MT*NF*512 when KS > 1',
  defines: ['GV_U', 'GV_PF', 'GV_PIPE', 'GV_MT', 'GV_LB'],
  // Streams its first weight tiles while the previous kernel finishes (griddepcontrol).
  overlapsPrevious: true,
});
const GEMV_MOE_ARGS = {
  ...W,
  x: 'ptr',
  perm: 'ptr',
  Kw: 'i32',
  ...TILES,
} as const;
/** fp8-gemv.cu's MoE tiles: fused gate|up + SwiGLU-OAI (8 gate + 8 up rows per block). */
export const FP8_GEMV_GU = kernel({
  file: 'fp8-gemv',
  names: variants('fp8_gemv_gu_', ['8', '16', '32'] as const),
  args: { ...GEMV_MOE_ARGS, D: 'i32', I: 'i32', act: 'ptr', alpha: 'f32', limit: 'f32' },
  launch: 'grid (maxTiles, ceil(I/8)), block 32*KS, dyn smem KS*BT*64 when KS > 1',
});
/** fp8-gemv.cu's MoE tiles: down times the routing weight (16 rows per block). */
export const FP8_GEMV_DOWN = kernel({
  file: 'fp8-gemv',
  names: variants('fp8_gemv_down_', ['8', '16', '32'] as const),
  args: {
    ...W,
    act: 'ptr',
    perm: 'ptr',
    Kw: 'i32',
    ...TILES,
    I: 'i32',
    D: 'i32',
    y: 'ptr',
    rw: 'ptr',
  },
  launch: 'grid (maxTiles, ceil(D/16)), block 32*KS, dyn smem KS*BT*64 when KS > 1',
});
/** kernels/fp8-wgmma.cu: block-FP8 decode GEMMs on wgmma (sm_90a; a warpgroup per 64 rows and K range). */
export const FP8_WG = kernel({
  file: 'fp8-wgmma',
  names: variants(
    'fp8_wg_',
    (['b', 'f'] as const).flatMap((o) =>
      (['1', '2', '4'] as const).map((nf) => `${o}_${nf}` as const),
    ),
  ),
  args: { W: 'ptr', S: 'ptr', G: 'i32', x: 'ptr', M: 'i32', N: 'i32', K: 'i32', out: 'ptr' },
  launch: 'grid (ceil(N/64)), block 128*KS (KS 1..4), dyn smem KS*2*NF*2048',
});
