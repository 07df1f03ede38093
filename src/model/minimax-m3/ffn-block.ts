import type { Tensor } from '../../tensor/tensor.js';
import type { StepContext } from './step-context.js';
import type { MlpWeights, MoeWeights } from './weights.js';

/** Dense SwiGLU-OAI MLP, column- then row-parallel: x [M, D] → out [M, D] (partial over tp). */
export function mlpBlock(ctx: StepContext, w: MlpWeights, x: Tensor, out: Tensor): void {
  ctx.backend.matmul(out, mlpHidden(ctx, w, x), w.down);
}

/**
 * The column-parallel half of the MLP, x [M, D] → act [M, I/tp]: what down_proj (row-parallel,
 * w.down) takes, for a caller that runs down_proj with its reduction (ResidualStream.project).
 */
export function mlpHidden(ctx: StepContext, w: MlpWeights, x: Tensor): Tensor {
  const { backend: b, cfg } = ctx;
  const M = x.shape[0]!;
  const I = w.down.shape[1]!;
  const gu = ctx.output([M, 2 * I]); // [M, 2I]
  const act = ctx.output([M, I]); // [M, I]
  b.matmul(gu, x, w.gateUp);
  b.swigluOai(act, gu, cfg.swigluAlpha, cfg.swigluLimit);
  return act;
}

/** Router output of M rows: ids and weights [M, K'] (K' = K + 1 with a fused shared slot). */
export interface Routing {
  readonly ids: Tensor;
  readonly weights: Tensor;
}

/**
 * fp32 sigmoid router (§2.7): top-K by biased score, renormalised weights × routed scale; with
 * the shared expert fused in, column K is expert id E with weight exactly 1 (seed 002).
 */
export function routeTokens(ctx: StepContext, w: MoeWeights, x: Tensor): Routing {
  const { backend: b, cfg } = ctx;
  const M = x.shape[0]!;
  const E = cfg.numExperts;
  const fused = w.experts.firstExpert + w.experts.numLocalExperts > E;
  const width = cfg.numExpertsPerTok + (fused ? 1 : 0);
  const logits = ctx.output([M, E], 'f32'); // [M, E]
  const ids = ctx.scratch([M, width], 'i32'); // [M, K']
  const weights = ctx.scratch([M, width], 'f32'); // [M, K']
  b.matmul(logits, x, w.gate);
  b.routerTopK(ids, weights, logits, w.bias, {
    topK: cfg.numExpertsPerTok,
    scale: cfg.routedScalingFactor,
    sharedExpertId: fused ? E : null,
  });
  return { ids, weights };
}

/**
 * Tensor-parallel MoE: routed experts (each split on its intermediate dim) plus the unweighted
 * shared expert, x [T, D] → out [T, D], a partial sum over ranks that the caller reduces.
 */
export function moeBlock(
  ctx: StepContext,
  layer: number,
  w: MoeWeights,
  x: Tensor,
  out: Tensor,
): void {
  const { backend: b, cfg } = ctx;
  const { ids, weights } = routeTokens(ctx, w, x);
  if (ctx.meta.batch.captureRoutedExperts) ctx.routedExperts[String(layer)] = b.readI32(ids);
  const o = { alpha: cfg.swigluAlpha, limit: cfg.swigluLimit };
  // the shared expert inside the backend's MoE where it takes it (the CPU: in the routed
  // experts' thread-pool jobs, fewer jobs a layer), else as its own MLP: the same bits
  if (w.shared && b.moeTakesShared?.(w.shared))
    return b.moe(out, x, ids, weights, w.experts, { ...o, shared: w.shared });
  b.moe(out, x, ids, weights, w.experts, o);
  if (w.shared) {
    const s = ctx.output([x.shape[0]!, cfg.hiddenSize]); // [T, D]
    mlpBlock(ctx, w.shared, x, s);
    b.add(out, out, s);
  }
}
