import type { Tensor } from '../../tensor/tensor.js';
import type { StepContext } from './step-context.js';
import type { MlpWeights, MoeWeights } from './weights.js';

/** Dense SwiGLU-OAI MLP, column- then row-parallel: x [T, D] → out [T, D] (partial over tp). */
export function mlpBlock(ctx: StepContext, w: MlpWeights, x: Tensor, out: Tensor): void {
  const { backend: b, cfg } = ctx;
  const I = w.down.shape[1]!;
  const gu = ctx.scratch([ctx.numTokens, 2 * I]); // [T, 2I]
  const act = ctx.scratch([ctx.numTokens, I]); // [T, I]
  b.matmul(gu, x, w.gateUp);
  b.swigluOai(act, gu, cfg.swigluAlpha, cfg.swigluLimit);
  b.matmul(out, act, w.down);
}

/**
 * MoE (§2.7): fp32 sigmoid router, top-K by biased score, renormalised weights × routed
 * scale; routed experts plus the unweighted shared expert (or the shared expert fused in as
 * expert id E with weight 1). Reduced immediately (seed 000: never deferred after MoE).
 */
export async function moeBlock(
  ctx: StepContext,
  layer: number,
  w: MoeWeights,
  x: Tensor,
  out: Tensor,
): Promise<void> {
  const { backend: b, cfg } = ctx;
  const T = ctx.numTokens;
  const E = cfg.numExperts;
  const fused = w.experts.numLocalExperts > E;
  const width = cfg.numExpertsPerTok + (fused ? 1 : 0);
  const logits = ctx.scratch([T, E], 'f32'); // [T, E]
  const ids = ctx.scratch([T, width], 'i32'); // [T, K']
  const weights = ctx.scratch([T, width], 'f32'); // [T, K']
  b.matmul(logits, x, w.gate);
  b.routerTopK(ids, weights, logits, w.bias, {
    topK: cfg.numExpertsPerTok,
    scale: cfg.routedScalingFactor,
    sharedExpertId: fused ? E : null,
  });
  if (ctx.meta.batch.captureRoutedExperts) ctx.routedExperts[String(layer)] = b.readI32(ids);
  b.moe(out, x, ids, weights, w.experts, { alpha: cfg.swigluAlpha, limit: cfg.swigluLimit });
  if (w.shared) {
    const s = ctx.scratch([T, cfg.hiddenSize]); // [T, D]
    mlpBlock(ctx, w.shared, x, s);
    b.add(out, out, s);
  }
  await ctx.comm.allReduce(out);
}
