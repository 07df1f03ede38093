import { normRopeCache } from '../../backend/norm-rope-cache-steps.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { LayerKvCache } from './kv-cache.js';
import type { StepContext } from './step-context.js';
import type { AttentionWeights } from './weights.js';

/**
 * Self-attention of one layer (shared/design/minimax-m3.md §2.4–2.5): q/k/v projections,
 * per-head Gemma q/k norms, partial NeoX RoPE, paged KV write, then dense causal GQA or
 * (MSA layers) attention over the blocks the index branch selects. x [T, D] → the attention
 * output [T, H·Dh] of this rank's heads; o_proj (row-parallel, w.oProj) is the caller's, as
 * one step with its reduction (ResidualStream.project: GEMM then all-reduce, or under SP
 * GEMM + reduce-scatter).
 */
export function attentionBlock(
  ctx: StepContext,
  w: AttentionWeights,
  kv: LayerKvCache,
  x: Tensor,
): Tensor {
  const { backend: b, cfg, meta } = ctx;
  const T = ctx.numTokens;
  const Dh = cfg.headDim;
  const H = w.qProj.shape[0]! / Dh; // local query heads
  const Hkv = w.kProj.shape[0]! / Dh; // local KV heads
  const rope = { headDim: Dh, rotaryDim: cfg.rotaryDim, theta: cfg.ropeTheta };

  const q = ctx.output([T, H * Dh]); // [T, H·Dh]
  const k = ctx.output([T, Hkv * Dh]); // [T, Hkv·Dh]
  const v = ctx.output([T, Hkv * Dh]); // [T, Hkv·Dh]
  const index = w.index && kv.indexK ? indexProjections(ctx, Hkv) : null;
  const outs = [q, k, v, ...(index ? [index.iq, index.ik] : [])];
  const idxW = index ? w.index : null;
  const ws = [w.qProj, w.kProj, w.vProj, ...(idxW ? [idxW.qProj, idxW.kProj] : [])];
  // every projection of x at once where the backend can (one thread-pool job on the CPU)
  if (b.matmulMany) b.matmulMany(outs, x, ws);
  else outs.forEach((o, i) => b.matmul(o, x, ws[i]!));
  // q/k norms, RoPE, K/V cache writes (one kernel where the backend fuses them).
  normRopeCache(
    b,
    {
      q,
      k,
      v,
      qNorm: w.qNorm,
      kNorm: w.kNorm,
      kCache: kv.k,
      vCache: kv.v,
      numQHeads: H,
      numKHeads: Hkv,
      ...rope,
      eps: cfg.rmsNormEps,
      kScale: kv.kScale,
      vScale: kv.vScale,
    },
    meta,
  );

  const blocks = index && kv.indexK ? selectBlocks(ctx, w, kv.indexK, index, Hkv) : null;
  const attn = ctx.output([T, H * Dh]); // [T, H·Dh]
  b.attention(attn, q, kv.k, kv.v, meta, {
    numHeads: H,
    numKvHeads: Hkv,
    headDim: Dh,
    scale: 1 / Math.sqrt(Dh),
    kScale: kv.kScale,
    vScale: kv.vScale,
    blocks,
  });
  return attn;
}

interface IndexProjections {
  readonly iq: Tensor;
  readonly ik: Tensor;
}

/** Outputs of the MSA index projections: one index query head per local KV head, one key. */
function indexProjections(ctx: StepContext, Hkv: number): IndexProjections {
  const T = ctx.numTokens;
  const Di = ctx.cfg.sparse!.indexDim;
  const iq = ctx.output([T, Hkv * Di]); // [T, Hkv·Didx]
  const ik = ctx.output([T, Di]); // [T, Didx]
  return { iq, ik };
}

/** The MSA index branch on its projections (indexProjections, computed with q/k/v). */
function selectBlocks(
  ctx: StepContext,
  w: AttentionWeights,
  indexK: Tensor,
  { iq, ik }: IndexProjections,
  Hkv: number,
): Tensor {
  const { backend: b, cfg, meta } = ctx;
  const sparse = cfg.sparse!;
  const idx = w.index!;
  const T = ctx.numTokens;
  const Di = sparse.indexDim;
  // Index q/k norms, RoPE, the index-key cache write (scale 1).
  normRopeCache(
    b,
    {
      q: iq,
      k: ik,
      v: null,
      qNorm: idx.qNorm,
      kNorm: idx.kNorm,
      kCache: indexK,
      vCache: null,
      numQHeads: Hkv,
      numKHeads: 1,
      headDim: Di,
      rotaryDim: cfg.rotaryDim,
      theta: cfg.ropeTheta,
      eps: cfg.rmsNormEps,
      kScale: 1,
      vScale: 1,
    },
    meta,
  );
  const blocks = ctx.scratch([Hkv, T, sparse.topkBlocks], 'i32'); // [Hkv, T, topk]
  b.msaSelect(blocks, iq, indexK, meta, {
    numIndexHeads: Hkv,
    indexDim: Di,
    topk: sparse.topkBlocks,
    initBlocks: sparse.initBlocks,
    localBlocks: sparse.localBlocks,
  });
  return blocks;
}
