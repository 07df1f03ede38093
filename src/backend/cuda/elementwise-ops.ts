/** Launchers for kernels/elementwise.cu and kernels/norm.cu (see the kernels' headers). */
import { checkCacheScale } from '../kv-scale.js';
import { numel } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { CudaBatchMeta } from './batch-meta.js';
import { CudaFp8Weight } from './cuda-fp8-weight.js';
import { fp8Embedding } from './fp8-ops.js';
import { cuda, letter } from './cuda-tensor.js';
import type { TypeLetter } from './kernel-decl.js';
import { launchKernel } from './kernel-launch.js';
import {
  ADD,
  ADD_RMSNORM_BLOCK,
  ADD_RMSNORM_WARP,
  CONVERT,
  EMBEDDING,
  FILL_RANDOM,
  GATHER_ROWS,
  RMSNORM_BLOCK,
  SPLIT_COLUMNS,
  RMSNORM_WARP,
  ROPE,
  SWIGLU,
  WRITE_CACHE,
  WRITE_CACHE_FP8,
} from './kernel-table.js';
import { strideGrid, type OpContext } from './op-context.js';

const B256: [number, number, number] = [256, 1, 1];

export function embedding(ctx: OpContext, out: Tensor, table: Tensor, meta: CudaBatchMeta): void {
  const D = table.shape[1]!;
  const o = cuda(out, 'embedding.out', ['bf16', 'f32'], [meta.numTokens, D]);
  if (table instanceof CudaFp8Weight) {
    // --quantization fp8 keeps the table in FP8: rows dequantized in the lookup.
    fp8Embedding(ctx, o.ptr, letter(o, 'embedding'), table, meta.tokenIds, meta.numTokens);
    return;
  }
  const w = cuda(table, 'embedding.table', ['bf16', 'f32']);
  launchKernel(
    ctx,
    EMBEDDING,
    `embedding_${letter(o, 'embedding')}${letter(w, 'embedding')}`,
    { grid: [meta.numTokens, 1, 1], block: B256 },
    { out: o.ptr, table: w.ptr, ids: meta.tokenIds, D },
  );
}

function rows(x: Tensor, n: number, what: string): number {
  const r = numel(x.shape) / n;
  if (!Number.isInteger(r))
    throw new Error(`${what}: ${numel(x.shape)} elements are not rows of ${n}`);
  return r;
}

export function rmsNorm(ctx: OpContext, out: Tensor, x: Tensor, w: Tensor, eps: number): void {
  const n = numel(w.shape);
  const o = cuda(out, 'rmsNorm.out', ['bf16', 'f32'], x.shape);
  const xi = cuda(x, 'rmsNorm.x', ['bf16', 'f32']);
  const wi = cuda(w, 'rmsNorm.w', ['bf16', 'f32']);
  const R = rows(x, n, 'rmsNorm');
  const s = `${letter(o, 'rmsNorm')}${letter(xi, 'rmsNorm')}${letter(wi, 'rmsNorm')}` as const;
  const io = { out: o.ptr, x: xi.ptr, w: wi.ptr, n, eps };
  if (n >= 512) {
    launchKernel(ctx, RMSNORM_BLOCK, `rmsnorm_block_${s}`, { grid: [R, 1, 1], block: B256 }, io);
  } else {
    const grid = [Math.ceil(R / 8), 1, 1] as const;
    launchKernel(ctx, RMSNORM_WARP, `rmsnorm_warp_${s}`, { grid, block: B256 }, { ...io, rows: R });
  }
}

export function addRmsNorm(
  ctx: OpContext,
  out: Tensor,
  residual: Tensor,
  x: Tensor,
  w: Tensor,
  eps: number,
): void {
  const n = numel(w.shape);
  const r = cuda(residual, 'addRmsNorm.residual', ['bf16', 'f32'], x.shape);
  const o = cuda(out, 'addRmsNorm.out', [r.dtype], x.shape);
  const xi = cuda(x, 'addRmsNorm.x', ['bf16', 'f32']);
  const wi = cuda(w, 'addRmsNorm.w', ['bf16', 'f32']);
  const R = rows(x, n, 'addRmsNorm');
  const s =
    `${letter(r, 'addRmsNorm')}${letter(xi, 'addRmsNorm')}${letter(wi, 'addRmsNorm')}` as const;
  const io = { out: o.ptr, res: r.ptr, x: xi.ptr, w: wi.ptr, n, eps };
  if (n >= 512) {
    const shape = { grid: [R, 1, 1], block: B256 } as const;
    launchKernel(ctx, ADD_RMSNORM_BLOCK, `add_rmsnorm_block_${s}`, shape, io);
  } else {
    const shape = { grid: [Math.ceil(R / 8), 1, 1], block: B256 } as const;
    launchKernel(ctx, ADD_RMSNORM_WARP, `add_rmsnorm_warp_${s}`, shape, { ...io, rows: R });
  }
}

export function add(ctx: OpContext, out: Tensor, a: Tensor, b: Tensor): void {
  const o = cuda(out, 'add.out', ['bf16', 'f32'], a.shape);
  const ai = cuda(a, 'add.a', ['bf16', 'f32']);
  const bi = cuda(b, 'add.b', ['bf16', 'f32'], a.shape);
  const n = numel(a.shape);
  launchKernel(
    ctx,
    ADD,
    `add_${letter(o, 'add')}${letter(ai, 'add')}${letter(bi, 'add')}`,
    { grid: strideGrid(ctx, n), block: B256 },
    { out: o.ptr, a: ai.ptr, b: bi.ptr, n },
  );
}

/** Heads one RoPE thread rotates with one angle (elementwise.cu ROPE_HEADS). */
const ROPE_HEADS = 8;

export function rope(
  ctx: OpContext,
  x: Tensor,
  meta: CudaBatchMeta,
  o: { numHeads: number; headDim: number; rotaryDim: number; theta: number },
): void {
  const xi = cuda(x, 'rope.x', ['bf16', 'f32'], [meta.numTokens, o.numHeads * o.headDim]);
  // One thread per (token, pair, group of ROPE_HEADS heads): elementwise.cu's rope_impl.
  const n = meta.numTokens * Math.ceil(o.numHeads / ROPE_HEADS) * (o.rotaryDim / 2);
  launchKernel(
    ctx,
    ROPE,
    `rope_${letter(xi, 'rope')}`,
    { grid: strideGrid(ctx, n), block: B256 },
    {
      x: xi.ptr,
      pos: meta.positions,
      T: meta.numTokens,
      H: o.numHeads,
      Dh: o.headDim,
      R: o.rotaryDim,
      theta: o.theta,
    },
  );
}

export function writeCache(
  ctx: OpContext,
  cache: Tensor,
  x: Tensor,
  meta: CudaBatchMeta,
  scale: number,
): void {
  const W = x.shape[x.shape.length - 1]!;
  const c = cuda(cache, 'writeCache.cache', ['bf16', 'f32', 'f8e4m3']);
  if (c.shape[c.shape.length - 1] !== W)
    throw new Error(`writeCache: cache rows of ${c.shape[c.shape.length - 1]}, x rows of ${W}`);
  const xi = cuda(x, 'writeCache.x', ['bf16', 'f32'], [meta.numTokens, W]);
  checkCacheScale(c, scale);
  if (c.dtype === 'f8e4m3') {
    launchKernel(
      ctx,
      WRITE_CACHE_FP8,
      `write_cache_8${letter(xi, 'writeCache')}`,
      { grid: [meta.numTokens, 1, 1], block: B256 },
      { cache: c.ptr, x: xi.ptr, slots: meta.slots, W, scale },
    );
    return;
  }
  launchKernel(
    ctx,
    WRITE_CACHE,
    `write_cache_${letter(c, 'writeCache')}${letter(xi, 'writeCache')}`,
    { grid: [meta.numTokens, 1, 1], block: B256 },
    { cache: c.ptr, x: xi.ptr, slots: meta.slots, W },
  );
}

export function swigluOai(
  ctx: OpContext,
  out: Tensor,
  gateUp: Tensor,
  alpha: number,
  limit: number,
): void {
  const I = out.shape[out.shape.length - 1]!;
  const M = numel(out.shape) / I;
  const o = cuda(out, 'swigluOai.out', ['bf16', 'f32']);
  const gu = cuda(gateUp, 'swigluOai.gateUp', ['bf16', 'f32']);
  if (numel(gu.shape) !== 2 * M * I)
    throw new Error(`swigluOai: gateUp has ${numel(gu.shape)} elements, expected ${2 * M * I}`);
  launchKernel(
    ctx,
    SWIGLU,
    `swiglu_${letter(o, 'swiglu')}${letter(gu, 'swiglu')}`,
    { grid: strideGrid(ctx, M * I), block: B256 },
    { out: o.ptr, gu: gu.ptr, M, I, alpha, limit },
  );
}

export function gatherLogitRows(ctx: OpContext, out: Tensor, x: Tensor, meta: CudaBatchMeta): void {
  const D = x.shape[1]!;
  const o = cuda(out, 'gatherLogitRows.out', ['bf16', 'f32'], [meta.numLogitRows, D]);
  const xi = cuda(x, 'gatherLogitRows.x', ['bf16', 'f32']);
  launchKernel(
    ctx,
    GATHER_ROWS,
    `gather_rows_${letter(o, 'gather')}${letter(xi, 'gather')}`,
    { grid: [meta.numLogitRows, 1, 1], block: B256 },
    { out: o.ptr, x: xi.ptr, rows: meta.logitRows, D },
  );
}

/** out [M, N] = columns [off, off + N) of the bf16 rows `inp` [M, Ntot] (multiples of 8). */
export function splitColumns(
  ctx: OpContext,
  out: number,
  inp: number,
  M: number,
  N: number,
  Ntot: number,
  off: number,
): void {
  if (N % 8 || Ntot % 8 || off % 8)
    throw new Error(`splitColumns: N ${N}, Ntot ${Ntot}, off ${off} must be multiples of 8`);
  const shape = { grid: strideGrid(ctx, (M * N) / 8), block: B256 };
  launchKernel(ctx, SPLIT_COLUMNS, 'split_columns_b', shape, { out, in: inp, M, N, Ntot, off });
}

/** out = in converted elementwise (n elements; pointers and type letters). */
export function convert(
  ctx: OpContext,
  out: number,
  outL: TypeLetter,
  inp: number,
  inL: TypeLetter,
  n: number,
): void {
  const shape = { grid: strideGrid(ctx, n), block: B256 };
  launchKernel(ctx, CONVERT, `convert_${outL}${inL}`, shape, { out, in: inp, n });
}

/** Fills n elements with offset + scale * U(-1, 1) from a hash of (seed, index). */
export function fillRandom(
  ctx: OpContext,
  out: number,
  outL: TypeLetter,
  n: number,
  seed: number,
  scale: number,
  offset: number,
): void {
  launchKernel(
    ctx,
    FILL_RANDOM,
    `fill_random_${outL}`,
    { grid: strideGrid(ctx, n), block: B256 },
    { out, n, seed: seed >>> 0, scale, offset },
  );
}
