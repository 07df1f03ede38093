/** Launchers for kernels/router.cu and kernels/moe.cu (see the kernels' headers). */
import type { ExpertWeights, MoeOptions, RouterOptions } from '../backend.js';
import { DTYPE_BYTES } from '../../tensor/dtype.js';
import type { Tensor } from '../../tensor/tensor.js';
import { cuda, CudaTensor, letter } from './cuda-tensor.js';
import type { TypeLetter } from './kernel-decl.js';
import { launchKernel } from './kernel-launch.js';
import {
  MOE_COMBINE,
  MOE_COUNT,
  MOE_DOWN_SCALAR,
  MOE_GU_SCALAR,
  MOE_MMA_DOWN,
  MOE_MMA_GU,
  MOE_SCAN,
  MOE_SCATTER,
  ROUTER_TOPK,
} from './kernel-table.js';
import { readEnv } from '../../config/env.js';
import type { CublasGemm } from './cublas-gemm.js';
import { moeGemmPath, perExpertCublasGemms, type MoeGemmPath } from './moe-expert-gemm.js';
import { CudaFp8Weight } from './cuda-fp8-weight.js';
import { fp8Dequantize, fp8MmaFits } from './fp8-ops.js';
import { fp8GemvMoe, gemvFits, gemvTileRows } from './fp8-gemv.js';
import { ltFor } from './lt-fp8-gemm.js';
import { w8a8MoeGemms } from './moe-w8a8.js';
import { w8a8MoeApplies } from '../../tensor/fp8-activation.js';
import {
  fp8MoeKernel,
  skinnyMoeGemms,
  skinnyMoeGemmsBf16,
  type Fp8DecodeKernel,
} from './skinny-gemm.js';
import { strideGrid, type OpContext } from './op-context.js';

export function routerTopK(
  ctx: OpContext,
  ids: Tensor,
  weights: Tensor,
  logits: Tensor,
  bias: Tensor | null,
  o: RouterOptions,
): void {
  const [T, E] = logits.shape as [number, number];
  const width = o.topK + (o.sharedExpertId === null ? 0 : 1);
  const io = cuda(ids, 'routerTopK.ids', ['i32'], [T, width]);
  const wo = cuda(weights, 'routerTopK.weights', ['f32'], [T, width]);
  const li = cuda(logits, 'routerTopK.logits', ['f32', 'bf16']);
  const bi = bias ? cuda(bias, 'routerTopK.bias', ['f32'], [E]).ptr : 0;
  if (o.topK > E) throw new Error(`routerTopK: top-${o.topK} of ${E} experts`);
  launchKernel(
    ctx,
    ROUTER_TOPK,
    `router_topk_${letter(li, 'routerTopK')}`,
    { grid: [Math.ceil(T / 8), 1, 1], block: [256, 1, 1], smem: 8 * 2 * E * 4 },
    {
      ids: io.ptr,
      weights: wo.ptr,
      logits: li.ptr,
      bias: bi,
      T,
      E,
      K: o.topK,
      scale: o.scale,
      sharedId: o.sharedExpertId ?? -1,
    },
  );
}

/**
 * bf16 experts' tile kernels: moe.cu's moe_mma_* ('mma') or skinny-gemm.cu's streaming loop
 * ('skinny', as the FP8 experts), the default by measurement (session 6 W2, skinny-bench, the
 * MoE layer at the real shape: T = 1 0.232 against 0.257 ms, T = 8 0.909 against 0.992, T = 64
 * 3.149 against 3.349, T = 2,048 7.22 against 7.35); checks and benchmarks may pick either.
 */
export type Bf16MoeTiles = 'mma' | 'skinny';
export const BF16_MOE_TILES: Bf16MoeTiles = 'skinny';

const MMA_STAGES = 4;
const MMA_PITCH = 72;

/** A tile height as the kernel names spell it (moe_mma_gu_16 ...). */
function tileName(BT: number): '16' | '32' | '64' {
  if (BT === 16 || BT === 32 || BT === 64) return `${BT}`;
  throw new Error(`moe: no kernel for tiles of ${BT} rows`);
}

/** Token rows per MoE tile: small at decode (few tokens per expert), larger for prefill. */
function tileRows(rows: number, experts: number): number {
  const perExpert = rows / Math.max(1, Math.min(experts, rows));
  return perExpert <= 16 ? 16 : perExpert <= 32 ? 32 : 64;
}

export interface MoePlan {
  readonly T: number;
  readonly D: number;
  readonly I: number;
  readonly E: number;
  readonly Kw: number;
  /** Token slots, T * Kw. */
  readonly n: number;
  readonly BT: number;
  readonly maxTiles: number;
  readonly mma: boolean;
  /** Workspace pointers. */
  readonly buf: Readonly<Record<(typeof BUFFERS)[number], number>>;
}

const BUFFERS = [
  'counts',
  'offsets',
  'cursor',
  'tileExpert',
  'tileStart',
  'numTiles',
  'perm',
  'slotRow',
  'act',
  'y',
] as const;

function planMoe(
  ctx: OpContext,
  T: number,
  D: number,
  I: number,
  E: number,
  Kw: number,
  mma: boolean,
  path: MoeGemmPath,
  tileHeight?: number,
): MoePlan {
  const n = T * Kw;
  const BT = mma ? (tileHeight ?? tileRows(n, E)) : 1 << 30;
  // Each non-empty expert adds at most one partial tile, and at most min(E, n) are non-empty.
  const maxTiles = mma ? Math.ceil(n / BT) + Math.min(E, n) : E;
  const bytes: Record<(typeof BUFFERS)[number], number> = {
    counts: E * 4,
    offsets: (E + 1) * 4,
    cursor: E * 4,
    tileExpert: maxTiles * 4,
    tileStart: maxTiles * 4,
    numTiles: 4,
    perm: n * 4,
    slotRow: n * 4,
    act: n * I * (mma ? 2 : 4),
    // The per-expert path keeps gate|up [n, 2I] f32 here before the down output.
    y: n * (path === 'per-expert-cublas' ? Math.max(D, 2 * I) : D) * 4,
  };
  const buf = Object.fromEntries(
    BUFFERS.map((b) => [b, ctx.ws.get(`moe.${b}`, bytes[b])]),
  ) as MoePlan['buf'];
  return { T, D, I, E, Kw, n, BT, maxTiles, mma, buf };
}

/**
 * moe.cu's tile-table kernel: 'serial' (one thread, an expert at a time) or 'warp' (warp scans,
 * 32 experts per step); the same table. Warp by measurement (session 8 W2, bench:gpu 3 + 1
 * bf16 decode graph step: 1.644 / 2.243 / 3.411 ms against serial's 1.656 / 2.256 / 3.421 at
 * B = 1 / 8 / 32, 10-13 µs per MoE layer).
 */
export type MoeScan = 'serial' | 'warp';
let moeScan: MoeScan = 'warp';

/** Picks the tile-table kernel (benchmarks: bench:gpu --moe-scan). */
export function setMoeScan(s: MoeScan): void {
  moeScan = s;
}

/** Counts per expert, tile table, and the permutation of token slots grouped by expert. */
function permute(ctx: OpContext, p: MoePlan, ids: number, first: number): void {
  const { buf: b, n, E } = p;
  const slots = { grid: strideGrid(ctx, n), block: [256, 1, 1] } as const;
  ctx.dev.memsetAsync(b.counts, 0, E * 4);
  launchKernel(ctx, MOE_COUNT, 'moe_count', slots, { counts: b.counts, ids, n, first, E });
  launchKernel(
    ctx,
    MOE_SCAN,
    moeScan === 'warp' ? 'moe_scan_warp' : 'moe_scan',
    { grid: [1, 1, 1], block: [32, 1, 1] },
    {
      offsets: b.offsets,
      cursor: b.cursor,
      tileExpert: b.tileExpert,
      tileStart: b.tileStart,
      numTiles: b.numTiles,
      counts: b.counts,
      E,
      BT: p.BT,
      maxTiles: p.maxTiles,
    },
  );
  launchKernel(ctx, MOE_SCATTER, 'moe_scatter', slots, {
    perm: b.perm,
    slotRow: b.slotRow,
    cursor: b.cursor,
    offsets: b.offsets,
    ids,
    n,
    first,
    E,
  });
}

/** Fused gate|up + SwiGLU and down GEMMs on tensor cores (bf16). */
function mmaGemms(
  ctx: OpContext,
  p: MoePlan,
  gu: number,
  x: number,
  dn: number,
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
  const rows = tileName(BT);
  launchKernel(
    ctx,
    MOE_MMA_GU,
    `moe_mma_gu_${rows}`,
    {
      grid: [Math.ceil(I / 64), p.maxTiles, 1],
      block: [128, 1, 1],
      smem: MMA_STAGES * (2 * 64 + BT) * MMA_PITCH * 2,
    },
    { W: gu, x, perm: b.perm, Kw, ...tiles, D, I, act: b.act, alpha: o.alpha, limit: o.limit },
  );
  launchKernel(
    ctx,
    MOE_MMA_DOWN,
    `moe_mma_down_${rows}`,
    {
      grid: [Math.ceil(D / 64), p.maxTiles, 1],
      block: [128, 1, 1],
      smem: MMA_STAGES * (64 + BT) * MMA_PITCH * 2,
    },
    { W: dn, act: b.act, perm: b.perm, Kw, ...tiles, I, D, y: b.y, rw: w },
  );
}

/** Warp-per-output fallback for f32 weights or shapes the tensor-core path does not take. */
function scalarGemms(
  ctx: OpContext,
  p: MoePlan,
  letters: `${TypeLetter}${TypeLetter}`,
  wl: TypeLetter,
  gu: number,
  x: number,
  dn: number,
  w: number,
  o: MoeOptions,
): void {
  const { buf: b, n, D, I, E, Kw } = p;
  if (n > 65535) throw new Error(`moe: ${n} token slots exceed the scalar path's grid limit`);
  launchKernel(
    ctx,
    MOE_GU_SCALAR,
    `moe_gu_scalar_${letters}`,
    { grid: [Math.ceil(I / 8), n, 1], block: [256, 1, 1] },
    {
      W: gu,
      x,
      perm: b.perm,
      Kw,
      offsets: b.offsets,
      E,
      D,
      I,
      act: b.act,
      alpha: o.alpha,
      limit: o.limit,
    },
  );
  launchKernel(
    ctx,
    MOE_DOWN_SCALAR,
    `moe_down_scalar_${wl}`,
    { grid: [Math.ceil(D / 8), n, 1], block: [256, 1, 1] },
    { W: dn, act: b.act, perm: b.perm, offsets: b.offsets, E, I, D, y: b.y, rw: w },
  );
}

/**
 * out [T, D] = sum over each token's Kw experts of weight * expert(x). `path` defaults to
 * `moeGemmPath` (per-expert cuBLAS for bf16 prefill batches outside graph capture, tile
 * kernels otherwise); the GPU checks pass it to compare the two.
 */
export function moe(
  ctx: OpContext,
  gemm: CublasGemm,
  out: Tensor,
  x: Tensor,
  ids: Tensor,
  weights: Tensor,
  ew: ExpertWeights,
  o: MoeOptions,
  path?: MoeGemmPath,
  fp8Kernel?: Fp8DecodeKernel,
  bf16Tiles: Bf16MoeTiles = BF16_MOE_TILES,
): void {
  const [T, D] = x.shape as [number, number];
  const E = ew.numLocalExperts;
  const I = ew.down.shape[2]!;
  const Kw = ids.shape[1]!;
  const xo = cuda(out, 'moe.out', ['bf16', 'f32'], [T, D]);
  const xi = cuda(x, 'moe.x', ['bf16', 'f32']);
  const ii = cuda(ids, 'moe.ids', ['i32'], [T, Kw]);
  const wi = cuda(weights, 'moe.weights', ['f32'], [T, Kw]);
  let gu = cuda(ew.gateUp, 'moe.gateUp', ['bf16', 'f32', 'f8e4m3'], [E, 2 * I, D]);
  let dn = cuda(ew.down, 'moe.down', [gu.dtype], [E, D, I]);
  if (gu instanceof CudaFp8Weight && dn instanceof CudaFp8Weight) {
    const t = { xo, xi, ii, wi, gu, dn };
    const dims = { T, D, I, E, Kw, first: ew.firstExpert };
    if (moeFp8(ctx, gemm, dims, t, o, path, fp8Kernel)) return;
    // Shapes the FP8 MMA kernels do not take (small test models): the same values in bf16.
    gu = dequantized(ctx, gu, 'moe.fp8.gateUp');
    dn = dequantized(ctx, dn as CudaFp8Weight, 'moe.fp8.down');
  } else if (gu instanceof CudaFp8Weight || dn instanceof CudaFp8Weight) {
    throw new Error('moe: gateUp and down must both be FP8 or both not');
  }
  const mma = gu.dtype === 'bf16' && xi.dtype === 'bf16' && D % 64 === 0 && I % 64 === 0;
  // Grouped where asked for (MOESERVE_MOE_GROUPED=1) and cuBLAS has it (12.5+).
  const grouped = readEnv().moeGrouped && gemm.hasGrouped;
  const how = path ?? moeGemmPath(T, mma, ctx.dev.isCapturing, grouped);
  if (how !== 'tiles' && !mma)
    throw new Error(
      'moe: the per-expert cuBLAS paths need bf16 weights and input, D and I multiples of 64',
    );
  const p = planMoe(ctx, T, D, I, E, Kw, mma, how);
  permute(ctx, p, ii.ptr, ew.firstExpert);
  if (how !== 'tiles') {
    const perm = { T, D, I, E, Kw, n: p.n, ...p.buf };
    const [g, d] = [gu.ptr, dn.ptr];
    const operands = {
      gateUpOf: (e: number) => g + e * 2 * I * D * 2,
      downOf: (e: number) => d + e * D * I * 2,
      x: xi.ptr,
      rw: wi.ptr,
      out: xo.ptr,
      grouped: how === 'grouped-cublas',
      concurrent: true,
    };
    perExpertCublasGemms(ctx, gemm, perm, { ...operands, outLetter: letter(xo, 'moe') }, o);
    return;
  }
  if (mma && bf16Tiles === 'skinny') skinnyMoeGemmsBf16(ctx, p, gu.ptr, xi.ptr, dn.ptr, wi.ptr, o);
  else if (mma) mmaGemms(ctx, p, gu.ptr, xi.ptr, dn.ptr, wi.ptr, o);
  else
    scalarGemms(
      ctx,
      p,
      `${letter(gu, 'moe')}${letter(xi, 'moe')}`,
      letter(dn, 'moe'),
      gu.ptr,
      xi.ptr,
      dn.ptr,
      wi.ptr,
      o,
    );
  combine(ctx, xo, p);
}

/**
 * FP8 experts read as FP8 by the tile kernels (skinny-gemm.cu) up to this many tokens: every
 * expert's codes once per 64-row tile, against dequantizing all experts to bf16 for cuBLAS (3
 * bytes moved per weight before cuBLAS reads 2); beyond it cuBLAS's GEMM rate wins.
 */
const FP8_MOE_TILES_MAX_TOKENS = 4096;

/**
 * Whether `moe` on these experts at T tokens only enqueues device work: not when it takes
 * W8A8 (block FP8 at prefill sizes), whose per-expert GEMMs read the row counts on the host.
 */
export function moeCapturable(T: number, ew: ExpertWeights): boolean {
  const { gateUp: gu, down: dn } = ew;
  if (!(gu instanceof CudaFp8Weight) || !(dn instanceof CudaFp8Weight)) return true;
  return !w8a8MoeApplies(gu.scaling, dn.scaling, T, gu.shape[2]!, dn.shape[2]!);
}

/**
 * FP8 experts: W8A8 where its rule applies (moe-w8a8.ts, per-expert cuBLASLt; `path` and
 * `fp8Kernel` pick among the W8A16 paths below it), else the FP8 tile kernels or, for long
 * prefills, each expert dequantized for cuBLAS.
 */
function moeFp8(
  ctx: OpContext,
  gemm: CublasGemm,
  dims: { T: number; D: number; I: number; E: number; Kw: number; first: number },
  t: {
    xo: CudaTensor;
    xi: CudaTensor;
    ii: CudaTensor;
    wi: CudaTensor;
    gu: CudaFp8Weight;
    dn: CudaFp8Weight;
  },
  o: MoeOptions,
  path: MoeGemmPath | undefined,
  fp8Kernel: Fp8DecodeKernel | undefined,
): boolean {
  const { T, D, I, E, Kw } = dims;
  const { xo, xi, ii, wi, gu, dn } = t;
  if (w8a8MoeApplies(gu.scaling, dn.scaling, T, D, I)) {
    if (xi.dtype !== 'bf16') throw new Error(`moe: W8A8 experts take bf16 input, not ${xi.dtype}`);
    if (ctx.dev.isCapturing)
      throw new Error(
        `moe: ${T} tokens on block-FP8 experts run W8A8 per expert (host-read row counts): not capturable`,
      );
    const p = planMoe(ctx, T, D, I, E, Kw, true, 'per-expert-cublas');
    permute(ctx, p, ii.ptr, dims.first);
    const perm = { T, D, I, E, Kw, n: p.n, ...p.buf };
    const io = { x: xi.ptr, rw: wi.ptr, out: xo.ptr, outLetter: letter(xo, 'moe') };
    w8a8MoeGemms(ctx, ltFor(ctx.dev), perm, gu, dn, io, o);
    return true;
  }
  const fp8 = xi.dtype === 'bf16' && fp8MmaFits(gu, D) && fp8MmaFits(dn, I);
  const how =
    path ?? (T > FP8_MOE_TILES_MAX_TOKENS && !ctx.dev.isCapturing ? 'per-expert-cublas' : 'tiles');
  if (fp8 && how === 'per-expert-cublas') {
    // Prefill: expert by expert, dequantized to bf16 just before its cuBLAS GEMMs.
    const p = planMoe(ctx, T, D, I, E, Kw, true, 'per-expert-cublas');
    permute(ctx, p, ii.ptr, dims.first);
    const perm = { T, D, I, E, Kw, n: p.n, ...p.buf };
    const operands = {
      gateUpOf: expertDequantizer(ctx, gu, 'moe.fp8.expert.gu'),
      downOf: expertDequantizer(ctx, dn, 'moe.fp8.expert.down'),
      x: xi.ptr,
      rw: wi.ptr,
      out: xo.ptr,
      grouped: false, // one dequantized expert buffer, reused
      concurrent: false,
    };
    perExpertCublasGemms(ctx, gemm, perm, { ...operands, outLetter: letter(xo, 'moe') }, o);
    return true;
  }
  if (fp8) {
    const kernel = fp8Kernel ?? fp8MoeKernel(T);
    const gemv =
      kernel === 'v8' && gemvFits(1, D, gu.scaling.group) && gemvFits(1, I, dn.scaling.group);
    const gemvBlock = gemv && gu.flavour === 'blk' && dn.flavour === 'blk';
    const bt = gemvBlock ? gemvTileRows(T * Kw, E) : undefined;
    const p = planMoe(ctx, T, D, I, E, Kw, true, 'tiles', bt);
    permute(ctx, p, ii.ptr, dims.first);
    if (gemvBlock) fp8GemvMoe(ctx, p, gemvOperand(gu), xi.ptr, gemvOperand(dn), wi.ptr, o);
    else skinnyMoeGemms(ctx, p, gu, xi.ptr, dn, wi.ptr, o, kernel === 'v8' ? 'w8a16' : kernel);
    combine(ctx, xo, p);
    return true;
  }
  return false;
}

/** Expert e of a stacked FP8 weight dequantized to bf16 into workspace `name` (reused). */
function expertDequantizer(ctx: OpContext, w: CudaFp8Weight, name: string): (e: number) => number {
  const per = w.numel / w.shape[0]!;
  return (e) => {
    const ptr = ctx.ws.get(name, per * 2);
    const scales = new CudaTensor(
      w.scales.shape.slice(1),
      w.scales.dtype,
      w.scales.ptr + e * (w.scales.numel / w.shape[0]!) * DTYPE_BYTES[w.scales.dtype],
      null,
    );
    fp8Dequantize(
      ctx,
      ptr,
      'b',
      new CudaFp8Weight(w.shape.slice(1), w.ptr + e * per, null, scales, w.scaling),
    );
    return ptr;
  };
}

/** An FP8 weight as the GEMV kernels take it. */
function gemvOperand(w: CudaFp8Weight): { ptr: number; scales: number; group: number } {
  return { ptr: w.ptr, scales: w.scales.ptr, group: w.scaling.group };
}

/** A bf16 copy of an FP8 weight in workspace `name` (code · scale rounded once to bf16). */
function dequantized(ctx: OpContext, w: CudaFp8Weight, name: string): CudaTensor {
  const ptr = ctx.ws.get(name, w.numel * 2);
  fp8Dequantize(ctx, ptr, 'b', w);
  return new CudaTensor(w.shape, 'bf16', ptr, null);
}

function combine(ctx: OpContext, xo: CudaTensor, p: MoePlan): void {
  launchKernel(
    ctx,
    MOE_COMBINE,
    `moe_combine_${letter(xo, 'moe')}`,
    { grid: [p.T, 1, 1], block: [256, 1, 1] },
    { out: xo.ptr, y: p.buf.y, slotRow: p.buf.slotRow, Kw: p.Kw, D: p.D },
  );
}
