import { combineInRankOrder, gatherRows, planDispatch } from '../../parallel/expert-dispatch.js';
import type { Tensor } from '../../tensor/tensor.js';
import { mlpBlock, routeTokens } from './ffn-block.js';
import type { ResidualStream } from './residual-stream.js';
import type { StepContext } from './step-context.js';
import type { MoeWeights } from './weights.js';

/**
 * Expert-parallel MoE layer. Every rank holds E/W whole experts and a replicated shared
 * expert. Each rank routes and dispatches only its own token rows — its SP shard, or (with a
 * replicated TP residual) rows [r·⌈T/W⌉, …) of it — so each token is computed once.
 *   - SP: shard in, shard out; no reduction (pad rows are neither routed nor sent).
 *   - TP residual: this rank's rows are placed in a zeroed [T, D] buffer, then all-reduced
 *     (or deferred) like any FFN output: the MegaMoE-without-SP baseline of seed 001.
 */
export async function expertParallelFfn(
  ctx: StepContext,
  rs: ResidualStream,
  layer: number,
  w: MoeWeights,
  a: Tensor,
  defer: boolean,
): Promise<Tensor> {
  const b = ctx.backend;
  const D = ctx.cfg.hiddenSize;
  const routing = routeTokens(ctx, w, a); // [rows, K'] (TP: all T rows, same on every rank)
  const width = routing.ids.shape[1]!;
  const ids = b.readI32(routing.ids);
  const weights = b.readF32(routing.weights);
  if (ctx.meta.batch.captureRoutedExperts)
    ctx.routedExperts[String(layer)] = rs.sp ? await gatherIds(ctx, rs, routing.ids) : ids;
  const { start, count } = rs.ownRows();
  const h = ctx.scratch([rs.numRows, D]); // [rows, D], zero outside this rank's tokens
  const slice = <A extends Int32Array | Float32Array>(v: A): A =>
    v.subarray(start * width, (start + count) * width) as A;
  await dispatchAndCombine(ctx, w, rowsOf(ctx, a, start, count), rowsOf(ctx, h, start, count), {
    ids: slice(ids),
    weights: slice(weights),
    width,
  });
  return rs.sp ? h : rs.reduce(h, defer);
}

interface HostRouting {
  readonly ids: Int32Array;
  readonly weights: Float32Array;
  readonly width: number;
}

/**
 * out [n, D] = Σ routed experts (wherever they live) + shared expert, for x [n, D]:
 * row counts, then tokens with their ids and weights, go out by all-to-all; each rank runs
 * its experts on what it received; the results come back by all-to-all and are summed per
 * token in rank order.
 */
async function dispatchAndCombine(
  ctx: StepContext,
  w: MoeWeights,
  x: Tensor,
  out: Tensor,
  r: HostRouting,
): Promise<void> {
  const { backend: b, comm, cfg } = ctx;
  const W = comm.worldSize;
  const D = cfg.hiddenSize;
  const n = x.shape[0]!;
  const plan = planDispatch(r.ids, r.width, n, w.experts.numLocalExperts, W);
  const ones = new Array<number>(W).fill(1);
  const recvCounts = ctx.scratch([W, 1], 'i32');
  await comm.allToAll(
    recvCounts,
    ctx.upload(Int32Array.from(plan.sendRows), [W, 1], 'i32'),
    ones,
    ones,
  );
  const recvRows = Array.from(b.readI32(recvCounts));
  const numRecv = recvRows.reduce((s, v) => s + v, 0);
  const numSend = plan.tokenOfRow.length;
  const send = <A extends Float32Array | Int32Array>(
    src: A,
    rowSize: number,
    make: (k: number) => A,
  ): A => gatherRows(src, plan.tokenOfRow, rowSize, make);
  const f32 = (k: number): Float32Array => new Float32Array(k);
  const xr = ctx.scratch([numRecv, D]); // [N_recv, D]
  const ir = ctx.scratch([numRecv, r.width], 'i32'); // [N_recv, K']
  const wr = ctx.scratch([numRecv, r.width], 'f32'); // [N_recv, K']
  const xs = ctx.upload(send(b.readF32(x), D, f32), [numSend, D], 'bf16');
  await comm.allToAll(xr, xs, plan.sendRows, recvRows);
  const is = ctx.upload(
    send(r.ids, r.width, (k) => new Int32Array(k)),
    [numSend, r.width],
    'i32',
  );
  await comm.allToAll(ir, is, plan.sendRows, recvRows);
  const ws = ctx.upload(send(r.weights, r.width, f32), [numSend, r.width], 'f32');
  await comm.allToAll(wr, ws, plan.sendRows, recvRows);
  const yr = ctx.scratch([numRecv, D]); // [N_recv, D]: Σ of this rank's experts per row
  if (numRecv > 0)
    b.moe(yr, xr, ir, wr, w.experts, { alpha: cfg.swigluAlpha, limit: cfg.swigluLimit });
  const back = ctx.scratch([numSend, D]); // [N_send, D]
  await comm.allToAll(back, yr, recvRows, plan.sendRows);
  const routed = ctx.upload(
    combineInRankOrder(b.readF32(back), plan.tokenOfRow, n, D),
    [n, D],
    'bf16',
  );
  const shared = ctx.scratch([n, D]); // [n, D], zero without a shared expert
  if (w.shared && n > 0) mlpBlock(ctx, w.shared, x, shared);
  b.add(out, routed, shared);
}

/** Rows [start, start+count) of t, or an empty [0, …] tensor. */
function rowsOf(ctx: StepContext, t: Tensor, start: number, count: number): Tensor {
  if (count === 0) return ctx.scratch([0, ...t.shape.slice(1)], t.dtype);
  return ctx.backend.rows(t, start, count);
}

/** SP: every shard's routed ids gathered, as [T, K'] on the host. */
async function gatherIds(ctx: StepContext, rs: ResidualStream, ids: Tensor): Promise<Int32Array> {
  const width = ids.shape[1]!;
  const all = ctx.scratch([rs.paddedTokens, width], 'i32');
  await ctx.comm.allGather(all, ids);
  return ctx.backend.readI32(all).subarray(0, ctx.numTokens * width);
}
