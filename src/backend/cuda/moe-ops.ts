/** Launchers for kernels/router.cu and kernels/moe.cu (see the kernels' headers). */
import type { ExpertWeights, MoeOptions, RouterOptions } from '../backend.js';
import type { Tensor } from '../../tensor/tensor.js';
import { cuda, letter } from './cuda-tensor.js';
import { ensureSmem, strideGrid, type OpContext } from './op-context.js';

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
  const fn = ctx.kernels.fn('router', `router_topk_${letter(li, 'routerTopK')}`);
  const smem = 8 * 2 * E * 4;
  ensureSmem(ctx, fn, smem);
  ctx.dev.launch(
    fn,
    [Math.ceil(T / 8), 1, 1],
    [256, 1, 1],
    smem,
    'ppppiiifi',
    io.ptr,
    wo.ptr,
    li.ptr,
    bi,
    T,
    E,
    o.topK,
    o.scale,
    o.sharedExpertId ?? -1,
  );
}

const MMA_STAGES = 4;
const MMA_PITCH = 72;

/** Token rows per MoE tile: small at decode (few tokens per expert), larger for prefill. */
function tileRows(rows: number, experts: number): number {
  const perExpert = rows / Math.max(1, Math.min(experts, rows));
  return perExpert <= 16 ? 16 : perExpert <= 32 ? 32 : 64;
}

export function moe(
  ctx: OpContext,
  out: Tensor,
  x: Tensor,
  ids: Tensor,
  weights: Tensor,
  ew: ExpertWeights,
  o: MoeOptions,
): void {
  const [T, D] = x.shape as [number, number];
  const E = ew.numLocalExperts;
  const I = ew.down.shape[2]!;
  const Kw = ids.shape[1]!;
  const n = T * Kw;
  const xo = cuda(out, 'moe.out', ['bf16', 'f32'], [T, D]);
  const xi = cuda(x, 'moe.x', ['bf16', 'f32']);
  const ii = cuda(ids, 'moe.ids', ['i32'], [T, Kw]);
  const wi = cuda(weights, 'moe.weights', ['f32'], [T, Kw]);
  const gu = cuda(ew.gateUp, 'moe.gateUp', ['bf16', 'f32'], [E, 2 * I, D]);
  const dn = cuda(ew.down, 'moe.down', [gu.dtype], [E, D, I]);
  const { dev, ws } = ctx;
  const mma = gu.dtype === 'bf16' && xi.dtype === 'bf16' && D % 64 === 0 && I % 64 === 0;
  const BT = mma ? tileRows(n, E) : 1 << 30;
  // Each non-empty expert adds at most one partial tile, and at most min(E, n) are non-empty.
  const maxTiles = mma ? Math.ceil(n / BT) + Math.min(E, n) : E;
  const counts = ws.get('moe.counts', E * 4);
  const offsets = ws.get('moe.offsets', (E + 1) * 4);
  const cursor = ws.get('moe.cursor', E * 4);
  const tileExpert = ws.get('moe.tileExpert', maxTiles * 4);
  const tileStart = ws.get('moe.tileStart', maxTiles * 4);
  const numTiles = ws.get('moe.numTiles', 4);
  const perm = ws.get('moe.perm', n * 4);
  const slotRow = ws.get('moe.slotRow', n * 4);
  const act = ws.get('moe.act', n * I * (mma ? 2 : 4));
  const y = ws.get('moe.y', n * D * 4);
  const k = (name: string) => ctx.kernels.fn('moe', name);
  dev.memsetAsync(counts, 0, E * 4);
  dev.launch(
    k('moe_count'),
    strideGrid(ctx, n),
    [256, 1, 1],
    0,
    'ppiii',
    counts,
    ii.ptr,
    n,
    ew.firstExpert,
    E,
  );
  dev.launch(
    k('moe_scan'),
    [1, 1, 1],
    [32, 1, 1],
    0,
    'ppppppiii',
    offsets,
    cursor,
    tileExpert,
    tileStart,
    numTiles,
    counts,
    E,
    BT,
    maxTiles,
  );
  dev.launch(
    k('moe_scatter'),
    strideGrid(ctx, n),
    [256, 1, 1],
    0,
    'pppppiii',
    perm,
    slotRow,
    cursor,
    offsets,
    ii.ptr,
    n,
    ew.firstExpert,
    E,
  );
  if (mma) {
    if (maxTiles > 65535)
      throw new Error(`moe: ${maxTiles} tiles exceed the grid limit; split the batch`);
    const fgu = k(`moe_mma_gu_${BT}`);
    const sgu = MMA_STAGES * (2 * 64 + BT) * MMA_PITCH * 2;
    ensureSmem(ctx, fgu, sgu);
    dev.launch(
      fgu,
      [Math.ceil(I / 64), maxTiles, 1],
      [128, 1, 1],
      sgu,
      'pppippppiipff',
      gu.ptr,
      xi.ptr,
      perm,
      Kw,
      offsets,
      tileExpert,
      tileStart,
      numTiles,
      D,
      I,
      act,
      o.alpha,
      o.limit,
    );
    const fdn = k(`moe_mma_down_${BT}`);
    const sdn = MMA_STAGES * (64 + BT) * MMA_PITCH * 2;
    ensureSmem(ctx, fdn, sdn);
    dev.launch(
      fdn,
      [Math.ceil(D / 64), maxTiles, 1],
      [128, 1, 1],
      sdn,
      'pppippppiipp',
      dn.ptr,
      act,
      perm,
      Kw,
      offsets,
      tileExpert,
      tileStart,
      numTiles,
      I,
      D,
      y,
      wi.ptr,
    );
  } else {
    if (n > 65535) throw new Error(`moe: ${n} token slots exceed the scalar path's grid limit`);
    const s = `${letter(gu, 'moe')}${letter(xi, 'moe')}`;
    dev.launch(
      k(`moe_gu_scalar_${s}`),
      [Math.ceil(I / 8), n, 1],
      [256, 1, 1],
      0,
      'pppipiiipff',
      gu.ptr,
      xi.ptr,
      perm,
      Kw,
      offsets,
      E,
      D,
      I,
      act,
      o.alpha,
      o.limit,
    );
    dev.launch(
      k(`moe_down_scalar_${letter(dn, 'moe')}`),
      [Math.ceil(D / 8), n, 1],
      [256, 1, 1],
      0,
      'ppppiiipp',
      dn.ptr,
      act,
      perm,
      offsets,
      E,
      I,
      D,
      y,
      wi.ptr,
    );
  }
  dev.launch(
    k(`moe_combine_${letter(xo, 'moe')}`),
    [T, 1, 1],
    [256, 1, 1],
    0,
    'pppii',
    xo.ptr,
    y,
    slotRow,
    Kw,
    D,
  );
}

/**
 * Dense out[M, N] = x[M, K] . w[N, K]^T for small M on the tensor-core streaming kernel
 * (bf16 operands, bf16 or f32 out). Returns false when the shape does not suit it.
 */
export function skinnyGemm(
  ctx: OpContext,
  out: number,
  outF32: boolean,
  x: number,
  w: number,
  M: number,
  N: number,
  K: number,
): boolean {
  if (M > 64 || K % 64 !== 0 || N < 2048) return false;
  const BT = M <= 16 ? 16 : M <= 32 ? 32 : 64;
  const fn = ctx.kernels.fn('moe', `gemm_skinny_${outF32 ? 'f' : 'b'}_${BT}`);
  const smem = MMA_STAGES * (64 + BT) * MMA_PITCH * 2;
  ensureSmem(ctx, fn, smem);
  ctx.dev.launch(
    fn,
    [Math.ceil(N / 64), Math.ceil(M / BT), 1],
    [128, 1, 1],
    smem,
    'ppiiip',
    w,
    x,
    M,
    N,
    K,
    out,
  );
  return true;
}
