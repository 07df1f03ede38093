/** Launchers for kernels/router.cu and kernels/moe.cu (see the kernels' headers). */
import type { ExpertWeights, MoeOptions, RouterOptions } from '../backend.js';
import type { Tensor } from '../../tensor/tensor.js';
import { cuda, letter } from './cuda-tensor.js';
import type { TypeLetter } from './kernel-decl.js';
import { launchKernel } from './kernel-launch.js';
import {
  MOE_DOWN_SCALAR,
  MOE_GU_SCALAR,
  MOE_MMA_DOWN,
  MOE_MMA_GU,
  ROUTER_TOPK,
} from './kernel-table.js';
import { readEnv } from '../../config/env.js';
import type { CublasGemm } from './cublas-gemm.js';
import { moeGemmPath, perExpertCublasGemms, type MoeGemmPath } from './moe-expert-gemm.js';
import { CudaFp8Weight } from './cuda-fp8-weight.js';
import { dequantized, moeFp8 } from './moe-fp8.js';
import { combine, permute, planMoe, type MoePlan } from './moe-plan.js';
import { skinnyMoeGemmsBf16, type Fp8DecodeKernel } from './skinny-gemm.js';
import type { OpContext } from './op-context.js';

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
