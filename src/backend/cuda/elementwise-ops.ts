/** Launchers for kernels/elementwise.cu and kernels/norm.cu (see the kernels' headers). */
import { numel } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { CudaBatchMeta } from './batch-meta.js';
import { cuda, letter } from './cuda-tensor.js';
import { strideGrid, type OpContext } from './op-context.js';

const B256: [number, number, number] = [256, 1, 1];

export function embedding(ctx: OpContext, out: Tensor, table: Tensor, meta: CudaBatchMeta): void {
  const D = table.shape[1]!;
  const o = cuda(out, 'embedding.out', ['bf16', 'f32'], [meta.numTokens, D]);
  const w = cuda(table, 'embedding.table', ['bf16', 'f32']);
  const fn = ctx.kernels.fn(
    'elementwise',
    `embedding_${letter(o, 'embedding')}${letter(w, 'embedding')}`,
  );
  ctx.dev.launch(fn, [meta.numTokens, 1, 1], B256, 0, 'pppi', o.ptr, w.ptr, meta.tokenIds, D);
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
  const s = `${letter(o, 'rmsNorm')}${letter(xi, 'rmsNorm')}${letter(wi, 'rmsNorm')}`;
  if (n >= 512) {
    ctx.dev.launch(
      ctx.kernels.fn('norm', `rmsnorm_block_${s}`),
      [R, 1, 1],
      B256,
      0,
      'pppif',
      o.ptr,
      xi.ptr,
      wi.ptr,
      n,
      eps,
    );
  } else {
    ctx.dev.launch(
      ctx.kernels.fn('norm', `rmsnorm_warp_${s}`),
      [Math.ceil(R / 8), 1, 1],
      B256,
      0,
      'ppplif',
      o.ptr,
      xi.ptr,
      wi.ptr,
      R,
      n,
      eps,
    );
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
  const s = `${letter(r, 'addRmsNorm')}${letter(xi, 'addRmsNorm')}${letter(wi, 'addRmsNorm')}`;
  if (n >= 512) {
    ctx.dev.launch(
      ctx.kernels.fn('norm', `add_rmsnorm_block_${s}`),
      [R, 1, 1],
      B256,
      0,
      'ppppif',
      o.ptr,
      r.ptr,
      xi.ptr,
      wi.ptr,
      n,
      eps,
    );
  } else {
    ctx.dev.launch(
      ctx.kernels.fn('norm', `add_rmsnorm_warp_${s}`),
      [Math.ceil(R / 8), 1, 1],
      B256,
      0,
      'pppplif',
      o.ptr,
      r.ptr,
      xi.ptr,
      wi.ptr,
      R,
      n,
      eps,
    );
  }
}

export function add(ctx: OpContext, out: Tensor, a: Tensor, b: Tensor): void {
  const o = cuda(out, 'add.out', ['bf16', 'f32'], a.shape);
  const ai = cuda(a, 'add.a', ['bf16', 'f32']);
  const bi = cuda(b, 'add.b', ['bf16', 'f32'], a.shape);
  const n = numel(a.shape);
  const fn = ctx.kernels.fn(
    'elementwise',
    `add_${letter(o, 'add')}${letter(ai, 'add')}${letter(bi, 'add')}`,
  );
  ctx.dev.launch(fn, strideGrid(ctx, n), B256, 0, 'pppl', o.ptr, ai.ptr, bi.ptr, n);
}

export function rope(
  ctx: OpContext,
  x: Tensor,
  meta: CudaBatchMeta,
  o: { numHeads: number; headDim: number; rotaryDim: number; theta: number },
): void {
  const xi = cuda(x, 'rope.x', ['bf16', 'f32'], [meta.numTokens, o.numHeads * o.headDim]);
  const n = meta.numTokens * o.numHeads * (o.rotaryDim / 2);
  const fn = ctx.kernels.fn('elementwise', `rope_${letter(xi, 'rope')}`);
  ctx.dev.launch(
    fn,
    strideGrid(ctx, n),
    B256,
    0,
    'ppiiiid',
    xi.ptr,
    meta.positions,
    meta.numTokens,
    o.numHeads,
    o.headDim,
    o.rotaryDim,
    o.theta,
  );
}

export function writeCache(ctx: OpContext, cache: Tensor, x: Tensor, meta: CudaBatchMeta): void {
  const W = x.shape[x.shape.length - 1]!;
  const c = cuda(cache, 'writeCache.cache', ['bf16', 'f32']);
  if (c.shape[c.shape.length - 1] !== W)
    throw new Error(`writeCache: cache rows of ${c.shape[c.shape.length - 1]}, x rows of ${W}`);
  const xi = cuda(x, 'writeCache.x', ['bf16', 'f32'], [meta.numTokens, W]);
  const fn = ctx.kernels.fn(
    'elementwise',
    `write_cache_${letter(c, 'writeCache')}${letter(xi, 'writeCache')}`,
  );
  ctx.dev.launch(fn, [meta.numTokens, 1, 1], B256, 0, 'pppi', c.ptr, xi.ptr, meta.slots, W);
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
  const fn = ctx.kernels.fn('elementwise', `swiglu_${letter(o, 'swiglu')}${letter(gu, 'swiglu')}`);
  ctx.dev.launch(fn, strideGrid(ctx, M * I), B256, 0, 'ppliff', o.ptr, gu.ptr, M, I, alpha, limit);
}

export function gatherLogitRows(ctx: OpContext, out: Tensor, x: Tensor, meta: CudaBatchMeta): void {
  const D = x.shape[1]!;
  const o = cuda(out, 'gatherLogitRows.out', ['bf16', 'f32'], [meta.numLogitRows, D]);
  const xi = cuda(x, 'gatherLogitRows.x', ['bf16', 'f32']);
  const fn = ctx.kernels.fn(
    'elementwise',
    `gather_rows_${letter(o, 'gather')}${letter(xi, 'gather')}`,
  );
  ctx.dev.launch(fn, [meta.numLogitRows, 1, 1], B256, 0, 'pppi', o.ptr, xi.ptr, meta.logitRows, D);
}

/** out = in converted elementwise (n elements; pointers and type letters). */
export function convert(
  ctx: OpContext,
  out: number,
  outL: 'b' | 'f',
  inp: number,
  inL: 'b' | 'f',
  n: number,
): void {
  const fn = ctx.kernels.fn('elementwise', `convert_${outL}${inL}`);
  ctx.dev.launch(fn, strideGrid(ctx, n), B256, 0, 'ppl', out, inp, n);
}

/** Fills n elements with offset + scale * U(-1, 1) from a hash of (seed, index). */
export function fillRandom(
  ctx: OpContext,
  out: number,
  outL: 'b' | 'f',
  n: number,
  seed: number,
  scale: number,
  offset: number,
): void {
  const fn = ctx.kernels.fn('elementwise', `fill_random_${outL}`);
  ctx.dev.launch(fn, strideGrid(ctx, n), B256, 0, 'pluff', out, n, seed >>> 0, scale, offset);
}
