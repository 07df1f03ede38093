/**
 * Launchers for kernels/fp8-gemm.cu (see its header): FP8 weights (W8A16) in dense GEMMs and
 * the MoE expert GEMMs, dequantization (prefill and odd shapes) and block-FP8 quantization.
 */
import type { MoeOptions } from '../backend.js';
import type { CudaFp8Weight } from './cuda-fp8-weight.js';
import { launchKernel } from './kernel-launch.js';
import {
  FP8_DEQUANT,
  FP8_DOWN,
  FP8_EMBEDDING,
  FP8_GEMM,
  FP8_GU,
  FP8_QUANTIZE,
} from './kernel-table.js';
import type { MoePlan } from './moe-ops.js';
import { strideGrid, type OpContext } from './op-context.js';

const F8_STAGES = 4;
const F8_BK = 128;
const F8_PITCH = F8_BK + 8;

/** Dynamic shared memory of an FP8 MMA kernel with `na` weight matrices and BT token rows. */
function smem(na: number, BT: number): number {
  return F8_STAGES * (na * 64 * F8_BK + BT * F8_PITCH * 2) + na * 64 * F8_PITCH * 2;
}

function tile(BT: number): '16' | '32' | '64' {
  if (BT === 16 || BT === 32 || BT === 64) return `${BT}`;
  throw new Error(`fp8: no kernel for tiles of ${BT} rows`);
}

/**
 * True when the MMA kernels take `w` with K inputs: whole 128-input tiles, and scale groups
 * that a tile's scale handling covers (block: multiples of 128; MX: of 16).
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

/** Dense out[M, N] = x[M, K] (bf16) · w^T for M ≤ 64; false when the shape does not suit it. */
export function fp8SkinnyGemm(
  ctx: OpContext,
  out: number,
  outF32: boolean,
  x: number,
  w: CudaFp8Weight,
  M: number,
): boolean {
  const [N, K] = w.shape as [number, number];
  if (M > 64 || !fp8MmaFits(w, K)) return false;
  const BT = M <= 16 ? 16 : M <= 32 ? 32 : 64;
  launchKernel(
    ctx,
    FP8_GEMM,
    `fp8_gemm_${outF32 ? 'f' : 'b'}_${w.flavour}_${tile(BT)}`,
    { grid: [Math.ceil(N / 64), Math.ceil(M / BT), 1], block: [128, 1, 1], smem: smem(1, BT) },
    { W: w.ptr, S: w.scales.ptr, G: w.scaling.group, x, M, N, K, out },
  );
  return true;
}

/** The MoE's fused gate|up + SwiGLU and down GEMMs on FP8 experts (moe-ops.ts mmaGemms). */
export function fp8MoeGemms(
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
  const tiles = {
    offsets: b.offsets,
    tileExpert: b.tileExpert,
    tileStart: b.tileStart,
    numTiles: b.numTiles,
  };
  const rows = tile(BT);
  launchKernel(
    ctx,
    FP8_GU,
    `fp8_gu_${gu.flavour}_${rows}`,
    { grid: [Math.ceil(I / 64), p.maxTiles, 1], block: [128, 1, 1], smem: smem(2, BT) },
    {
      W: gu.ptr,
      S: gu.scales.ptr,
      G: gu.scaling.group,
      x,
      perm: b.perm,
      Kw,
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
    FP8_DOWN,
    `fp8_down_${dn.flavour}_${rows}`,
    { grid: [Math.ceil(D / 64), p.maxTiles, 1], block: [128, 1, 1], smem: smem(1, BT) },
    {
      W: dn.ptr,
      S: dn.scales.ptr,
      G: dn.scaling.group,
      act: b.act,
      perm: b.perm,
      Kw,
      ...tiles,
      I,
      D,
      y: b.y,
      rw: w,
    },
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
