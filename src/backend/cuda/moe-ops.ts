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

interface MoePlan {
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
): MoePlan {
  const n = T * Kw;
  const BT = mma ? tileRows(n, E) : 1 << 30;
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
    y: n * D * 4,
  };
  const buf = Object.fromEntries(
    BUFFERS.map((b) => [b, ctx.ws.get(`moe.${b}`, bytes[b])]),
  ) as MoePlan['buf'];
  return { T, D, I, E, Kw, n, BT, maxTiles, mma, buf };
}

/** Counts per expert, tile table, and the permutation of token slots grouped by expert. */
function permute(ctx: OpContext, p: MoePlan, ids: number, first: number): void {
  const { dev } = ctx;
  const { buf: b, n, E } = p;
  const k = (name: string) => ctx.kernels.fn('moe', name);
  dev.memsetAsync(b.counts, 0, E * 4);
  dev.launch(
    k('moe_count'),
    strideGrid(ctx, n),
    [256, 1, 1],
    0,
    'ppiii',
    ...[b.counts, ids, n, first, E],
  );
  const scanArgs = [
    b.offsets,
    b.cursor,
    b.tileExpert,
    b.tileStart,
    b.numTiles,
    b.counts,
    E,
    p.BT,
    p.maxTiles,
  ];
  dev.launch(k('moe_scan'), [1, 1, 1], [32, 1, 1], 0, 'ppppppiii', ...scanArgs);
  const scatterArgs = [b.perm, b.slotRow, b.cursor, b.offsets, ids, n, first, E];
  dev.launch(k('moe_scatter'), strideGrid(ctx, n), [256, 1, 1], 0, 'pppppiii', ...scatterArgs);
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
  const tiles = [b.offsets, b.tileExpert, b.tileStart, b.numTiles];
  const fgu = ctx.kernels.fn('moe', `moe_mma_gu_${BT}`);
  const sgu = MMA_STAGES * (2 * 64 + BT) * MMA_PITCH * 2;
  ensureSmem(ctx, fgu, sgu);
  const guArgs = [gu, x, b.perm, Kw, ...tiles, D, I, b.act, o.alpha, o.limit];
  ctx.dev.launch(
    fgu,
    [Math.ceil(I / 64), p.maxTiles, 1],
    [128, 1, 1],
    sgu,
    'pppippppiipff',
    ...guArgs,
  );
  const fdn = ctx.kernels.fn('moe', `moe_mma_down_${BT}`);
  const sdn = MMA_STAGES * (64 + BT) * MMA_PITCH * 2;
  ensureSmem(ctx, fdn, sdn);
  const dnArgs = [dn, b.act, b.perm, Kw, ...tiles, I, D, b.y, w];
  ctx.dev.launch(
    fdn,
    [Math.ceil(D / 64), p.maxTiles, 1],
    [128, 1, 1],
    sdn,
    'pppippppiipp',
    ...dnArgs,
  );
}

/** Warp-per-output fallback for f32 weights or shapes the tensor-core path does not take. */
function scalarGemms(
  ctx: OpContext,
  p: MoePlan,
  letters: string,
  wl: string,
  gu: number,
  x: number,
  dn: number,
  w: number,
  o: MoeOptions,
): void {
  const { buf: b, n, D, I, E, Kw } = p;
  if (n > 65535) throw new Error(`moe: ${n} token slots exceed the scalar path's grid limit`);
  const guArgs = [gu, x, b.perm, Kw, b.offsets, E, D, I, b.act, o.alpha, o.limit];
  ctx.dev.launch(
    ctx.kernels.fn('moe', `moe_gu_scalar_${letters}`),
    [Math.ceil(I / 8), n, 1],
    [256, 1, 1],
    0,
    'pppipiiipff',
    ...guArgs,
  );
  const dnArgs = [dn, b.act, b.perm, b.offsets, E, I, D, b.y, w];
  ctx.dev.launch(
    ctx.kernels.fn('moe', `moe_down_scalar_${wl}`),
    [Math.ceil(D / 8), n, 1],
    [256, 1, 1],
    0,
    'ppppiiipp',
    ...dnArgs,
  );
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
  const xo = cuda(out, 'moe.out', ['bf16', 'f32'], [T, D]);
  const xi = cuda(x, 'moe.x', ['bf16', 'f32']);
  const ii = cuda(ids, 'moe.ids', ['i32'], [T, Kw]);
  const wi = cuda(weights, 'moe.weights', ['f32'], [T, Kw]);
  const gu = cuda(ew.gateUp, 'moe.gateUp', ['bf16', 'f32'], [E, 2 * I, D]);
  const dn = cuda(ew.down, 'moe.down', [gu.dtype], [E, D, I]);
  const mma = gu.dtype === 'bf16' && xi.dtype === 'bf16' && D % 64 === 0 && I % 64 === 0;
  const p = planMoe(ctx, T, D, I, E, Kw, mma);
  permute(ctx, p, ii.ptr, ew.firstExpert);
  if (mma) mmaGemms(ctx, p, gu.ptr, xi.ptr, dn.ptr, wi.ptr, o);
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
  const comb = ctx.kernels.fn('moe', `moe_combine_${letter(xo, 'moe')}`);
  ctx.dev.launch(comb, [T, 1, 1], [256, 1, 1], 0, 'pppii', xo.ptr, p.buf.y, p.buf.slotRow, Kw, D);
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
