/**
 * FP8 experts (block-FP8 and MXFP8 codes kept as FP8): W8A8 through per-expert cuBLASLt at
 * prefill sizes, the FP8 tile / GEMV kernels at decode sizes, or each expert dequantized for
 * cuBLAS on long prefills. moe-ops.ts's `moe` hands FP8 experts here first.
 */
import type { MoeOptions } from '../backend.js';
import type { ExpertWeights } from '../backend.js';
import { DTYPE_BYTES } from '../../tensor/dtype.js';
import { w8a8MoeApplies } from '../../tensor/fp8-activation.js';
import type { CublasGemm } from './cublas-gemm.js';
import { CudaFp8Weight } from './cuda-fp8-weight.js';
import { CudaTensor, letter } from './cuda-tensor.js';
import { fp8GemvMoe, gemvFits, gemvTileRows } from './fp8-gemv.js';
import { fp8Dequantize, fp8MmaFits } from './fp8-ops.js';
import { ltFor } from './lt-fp8-gemm.js';
import { perExpertCublasGemms, type MoeGemmPath } from './moe-expert-gemm.js';
import { combine, permute, planMoe } from './moe-plan.js';
import { w8a8MoeGemms } from './moe-w8a8.js';
import type { OpContext } from './op-context.js';
import { fp8MoeKernel, skinnyMoeGemms, type Fp8DecodeKernel } from './skinny-gemm.js';

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
export function moeFp8(
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
    const kernel = fp8Kernel ?? fp8MoeKernel(T, ctx.tuning.fp8Decode);
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
export function dequantized(ctx: OpContext, w: CudaFp8Weight, name: string): CudaTensor {
  const ptr = ctx.ws.get(name, w.numel * 2);
  fp8Dequantize(ctx, ptr, 'b', w);
  return new CudaTensor(w.shape, 'bf16', ptr, null);
}
