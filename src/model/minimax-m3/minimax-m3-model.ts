import type { Backend } from '../../backend/backend.js';
import type { ForwardBatch } from '../../backend/forward-batch.js';
import type { ModelConfig } from '../../config/model-config.js';
import type { Communicator } from '../../parallel/communicator.js';
import type { Tensor } from '../../tensor/tensor.js';
import { attentionBlock } from './attention-block.js';
import { mlpBlock, moeBlock } from './ffn-block.js';
import type { KvCache } from './kv-cache.js';
import { StepContext } from './step-context.js';
import type { ModelWeights } from './weights.js';

export interface ForwardOutput {
  /** [R, V] float32 logits of the batch's logit rows (host memory). */
  readonly logits: Float32Array;
  readonly numRows: number;
  /** MoE layer index -> [T, K'] routed ids, when the batch asked for them. */
  readonly routedExperts: Record<string, Int32Array>;
}

/**
 * MiniMax-M3 text model (shared/design/minimax-m3.md §2). Shapes: T tokens, D hidden.
 * Pre-norm decoder; the residual stream r is added inside each norm.
 */
export class MiniMaxM3Model {
  constructor(
    readonly cfg: ModelConfig,
    readonly weights: ModelWeights,
    readonly backend: Backend,
    readonly comm: Communicator,
  ) {}

  async forward(batch: ForwardBatch, kv: KvCache): Promise<ForwardOutput> {
    const b = this.backend;
    const ctx = new StepContext(this.cfg, b, this.comm, b.prepareBatch(batch));
    try {
      const T = ctx.numTokens;
      const D = this.cfg.hiddenSize;
      const h = ctx.scratch([T, D]); // [T, D] sub-layer output
      const r = ctx.scratch([T, D]); // [T, D] residual stream, starts at zero
      const a = ctx.scratch([T, D]); // [T, D] normalised input of a sub-layer
      b.embedding(h, this.weights.embed, ctx.meta);
      for (let i = 0; i < this.cfg.numLayers; i++) {
        const w = this.weights.layers[i]!;
        b.addRmsNorm(a, r, h, w.inputNorm, this.cfg.rmsNormEps); // r += h; a = norm(r)
        await attentionBlock(ctx, w.attn, kv.layers[i]!, a, h);
        b.addRmsNorm(a, r, h, w.postAttnNorm, this.cfg.rmsNormEps);
        if (w.moe) await moeBlock(ctx, i, w.moe, a, h);
        else {
          mlpBlock(ctx, w.mlp!, a, h);
          await this.comm.allReduce(h);
        }
      }
      b.addRmsNorm(a, r, h, this.weights.norm, this.cfg.rmsNormEps);
      return { ...(await this.lmHead(ctx, a)), routedExperts: ctx.routedExperts };
    } finally {
      ctx.release();
    }
  }

  /** Final rows through the vocabulary-parallel LM head, gathered to full [R, V] on the host. */
  private async lmHead(
    ctx: StepContext,
    y: Tensor,
  ): Promise<{ logits: Float32Array; numRows: number }> {
    const b = this.backend;
    const R = ctx.meta.numLogitRows;
    const D = this.cfg.hiddenSize;
    const Vl = this.weights.lmHead.shape[0]!;
    const rows = ctx.scratch([R, D]); // [R, D]
    b.gatherLogitRows(rows, y, ctx.meta);
    const local = ctx.scratch([R, Vl], 'f32'); // [R, V/tp]
    b.matmul(local, rows, this.weights.lmHead);
    const W = this.comm.worldSize;
    if (W === 1) return { logits: b.readF32(local), numRows: R };
    const all = ctx.scratch([W * R, Vl], 'f32'); // [tp·R, V/tp], rank-major
    await this.comm.allGather(all, local);
    const parts = b.readF32(all);
    const logits = new Float32Array(R * Vl * W);
    for (let w = 0; w < W; w++) {
      for (let r = 0; r < R; r++)
        logits.set(parts.subarray((w * R + r) * Vl, (w * R + r + 1) * Vl), r * Vl * W + w * Vl);
    }
    return { logits, numRows: R };
  }
}
