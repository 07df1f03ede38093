/**
 * Several GEMMs of one x (Backend.matmulMany). Weights that are adjacent row ranges of one
 * bf16 allocation (the loader packs the MSA index projections q|k, model weights.ts) run at
 * prefill sizes as one cuBLAS GEMM over the packed rows into a workspace, split into their
 * outputs after: alone, the small one runs far below the GEMM rate (s9w1, 8,192 rows: index k
 * [128 x 6144] 0.43 ms = 30 TFLOP/s, against about 750 for the [512 x 6144] beside it).
 * Decode row counts (the skinny kernels), FP8 weights and unpacked weights: one matmul each.
 */
import { numel } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { CublasGemm } from './cublas-gemm.js';
import { CudaFp8Weight } from './cuda-fp8-weight.js';
import { CudaTensor } from './cuda-tensor.js';
import * as ew from './elementwise-ops.js';
import { matmul } from './matmul-ops.js';
import type { OpContext } from './op-context.js';

/** From this many rows adjacent weights share one GEMM (below: decode, skinny kernels). */
export const PACKED_MIN_ROWS = 512;

export function matmulMany(
  ctx: OpContext,
  gemm: CublasGemm,
  outs: readonly Tensor[],
  x: Tensor,
  ws: readonly Tensor[],
  skinny: boolean,
): void {
  if (outs.length !== ws.length)
    throw new Error(`matmulMany: ${outs.length} outputs for ${ws.length} weights`);
  const K = x.shape[x.shape.length - 1]!;
  const M = numel(x.shape) / K;
  for (let i = 0; i < ws.length;) {
    const j = M >= PACKED_MIN_ROWS ? packedRun(outs, ws, i) : i + 1;
    if (j - i > 1) packedGemm(ctx, gemm, outs.slice(i, j), x, ws.slice(i, j), M, skinny);
    else matmul(ctx, gemm, outs[i]!, x, ws[i]!, skinny);
    i = j;
  }
}

/** A bf16 [N, K] weight (N a multiple of 8) with a bf16 output: what one split can serve. */
function splittable(w: Tensor, out: Tensor): w is CudaTensor {
  return (
    w instanceof CudaTensor &&
    !(w instanceof CudaFp8Weight) &&
    w.dtype === 'bf16' &&
    out.dtype === 'bf16' &&
    w.shape.length === 2 &&
    w.shape[0]! % 8 === 0
  );
}

/** The end (exclusive) of the run of weights from `i` whose rows follow each other in memory. */
function packedRun(outs: readonly Tensor[], ws: readonly Tensor[], i: number): number {
  const first = ws[i]!;
  if (!splittable(first, outs[i]!)) return i + 1;
  const K = first.shape[1]!;
  let end = first.ptr + first.shape[0]! * K * 2;
  let j = i + 1;
  for (; j < ws.length; j++) {
    const w = ws[j]!;
    if (!splittable(w, outs[j]!) || w.ptr !== end || w.shape[1] !== K) break;
    end += w.shape[0]! * K * 2;
  }
  return j;
}

function packedGemm(
  ctx: OpContext,
  gemm: CublasGemm,
  outs: readonly Tensor[],
  x: Tensor,
  ws: readonly Tensor[],
  M: number,
  skinny: boolean,
): void {
  const K = ws[0]!.shape[1]!;
  const Ntot = ws.reduce((n, w) => n + w.shape[0]!, 0);
  const all = new CudaTensor([Ntot, K], 'bf16', (ws[0] as CudaTensor).ptr, null);
  const tmp = new CudaTensor([M, Ntot], 'bf16', ctx.ws.get('matmulMany.out', M * Ntot * 2), null);
  matmul(ctx, gemm, tmp, x, all, skinny); // [M, Ntot]
  let off = 0;
  ws.forEach((w, i) => {
    const N = w.shape[0]!;
    ew.splitColumns(ctx, (outs[i] as CudaTensor).ptr, tmp.ptr, M, N, Ntot, off); // [M, N]
    off += N;
  });
}
