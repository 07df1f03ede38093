/**
 * Launchers for kernels/skinny-gemm.cu (see its header): decode GEMMs out[M, N] = x · W^T
 * for M ≤ 64 on bf16 or FP8 weights, split over K when the column blocks alone do not fill
 * the GPU, and the MoE's FP8 expert GEMMs on the same loop.
 */
import type { MoeOptions } from '../backend.js';
import type { CudaFp8Weight } from './cuda-fp8-weight.js';
import { SKINNY_DOWN, SKINNY_GEMM, SKINNY_GU, type SkinnyWeight } from './gemm-kernels.js';
import { launchKernel } from './kernel-launch.js';
import type { MoePlan } from './moe-ops.js';
import type { OpContext } from './op-context.js';

const ROW_BYTES = 128;
const SMEM_PER_SM = 227 * 1024;

/** The weight operand: bf16 rows, or FP8 codes with their scales. */
export interface SkinnyOperand {
  readonly kind: SkinnyWeight;
  readonly ptr: number;
  readonly scales: number;
  readonly group: number;
}

export function bf16Operand(ptr: number): SkinnyOperand {
  return { kind: 'b', ptr, scales: 0, group: 1 };
}

export function fp8Operand(w: CudaFp8Weight): SkinnyOperand {
  return { kind: w.flavour, ptr: w.ptr, scales: w.scales.ptr, group: w.scaling.group };
}

/** Inputs per pipeline stage (128 bytes of each weight row). */
function stageK(kind: SkinnyWeight): number {
  return kind === 'b' ? ROW_BYTES / 2 : ROW_BYTES;
}

/** True when the kernels take a weight of `kind` with K inputs (and its scale groups). */
export function skinnyFits(op: Pick<SkinnyOperand, 'kind' | 'group'>, K: number): boolean {
  if (K % stageK(op.kind) !== 0) return false;
  if (op.kind === 'blk') return op.group % 128 === 0;
  return op.kind === 'b' || op.group % 16 === 0;
}

/** 8-token tiles for M tokens. */
function tilesFor(M: number): 1 | 2 | 4 | 8 {
  return M <= 8 ? 1 : M <= 16 ? 2 : M <= 32 ? 4 : 8;
}

/** Dynamic shared memory of a block: STAGES x (128 weight rows + NF*8 token rows). */
export function skinnySmem(kind: SkinnyWeight, nf: number, weightRows = 128): number {
  const stages = kind !== 'b' && nf === 8 ? 3 : 4;
  return stages * (weightRows * ROW_BYTES + nf * 8 * stageK(kind) * 2);
}

/**
 * Splits of K: as many as fill the GPU's block slots with the column blocks (a column block
 * alone is one block), at least 2 stages of K each, at most 32; 1 when the column blocks
 * already cover the slots.
 */
export function skinnySplits(
  smCount: number,
  kind: SkinnyWeight,
  M: number,
  N: number,
  K: number,
): number {
  const nf = tilesFor(M);
  const perSm = Math.max(1, Math.floor(SMEM_PER_SM / (skinnySmem(kind, nf) + 1024)));
  const slots = smCount * perSm;
  const colBlocks = Math.ceil(N / 128);
  const kt = K / stageK(kind);
  return Math.max(1, Math.min(Math.floor(slots / colBlocks), 32, Math.floor(kt / 2)));
}

/**
 * Dense out[M, N] = x[M, K] (bf16) · W[N, K]^T for M ≤ 64, bf16 or f32 out; false when the
 * shape does not suit the kernels. `splits` overrides the split-K choice (benchmarks).
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
): boolean {
  if (M < 1 || M > 64 || !skinnyFits(w, K)) return false;
  const nf = tilesFor(M);
  const S = splits ?? skinnySplits(ctx.dev.smCount, w.kind, M, N, K);
  const colBlocks = Math.ceil(N / 128);
  let part = 0;
  let counters = 0;
  if (S > 1) {
    part = ctx.ws.get('skinny.part', S * M * N * 4);
    counters = ctx.ws.get('skinny.counters', colBlocks * 4);
    // Every launch leaves its counters at 0; a fresh (or grown) buffer starts at 0 here.
    if (!ctx.dev.isCapturing) ctx.dev.memsetAsync(counters, 0, colBlocks * 4);
  }
  launchKernel(
    ctx,
    SKINNY_GEMM,
    `skinny_${w.kind}_${outF32 ? 'f' : 'b'}_${nf}`,
    { grid: [colBlocks, 1, S], block: [128, 1, 1], smem: skinnySmem(w.kind, nf) },
    { W: w.ptr, S: w.scales, G: w.group, x, M, N, K, out, part, counters },
  );
  return true;
}

/** The MoE's fused gate|up + SwiGLU and down GEMMs on FP8 experts (tile table in `p`). */
export function skinnyMoeGemms(
  ctx: OpContext,
  p: MoePlan,
  gu: CudaFp8Weight,
  x: number,
  dn: CudaFp8Weight,
  w: number,
  o: MoeOptions,
): void {
  const { buf: b, BT, D, I, Kw } = p;
  if (p.maxTiles > 65535)
    throw new Error(`moe: ${p.maxTiles} tiles exceed the grid limit; split the batch`);
  const rows = tileRows(BT);
  const tiles = {
    offsets: b.offsets,
    tileExpert: b.tileExpert,
    tileStart: b.tileStart,
    numTiles: b.numTiles,
    perm: b.perm,
    Kw,
  };
  const smem = skinnySmem(gu.flavour, BT / 8);
  launchKernel(
    ctx,
    SKINNY_GU,
    `skinny_gu_${gu.flavour}_${rows}`,
    { grid: [Math.ceil(I / 64), p.maxTiles, 1], block: [128, 1, 1], smem },
    {
      ...fp8Args(gu),
      x,
      ...tiles,
      D,
      I,
      act: b.act,
      alpha: o.alpha,
      limit: o.limit,
    },
  );
  launchKernel(
    ctx,
    SKINNY_DOWN,
    `skinny_down_${dn.flavour}_${rows}`,
    { grid: [Math.ceil(D / 128), p.maxTiles, 1], block: [128, 1, 1], smem },
    { ...fp8Args(dn), act: b.act, ...tiles, I, D, y: b.y, rw: w },
  );
}

function tileRows(BT: number): '16' | '32' | '64' {
  if (BT === 16 || BT === 32 || BT === 64) return `${BT}`;
  throw new Error(`moe: no FP8 kernel for tiles of ${BT} rows`);
}

function fp8Args(w: CudaFp8Weight): { W: number; S: number; G: number } {
  return { W: w.ptr, S: w.scales.ptr, G: w.scaling.group };
}
