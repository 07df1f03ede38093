import type { Backend } from '../../backend/backend.js';
import type { ForwardBatch } from '../../backend/forward-batch.js';
import type { ModelConfig } from '../../config/model-config.js';
import { planAllReducePlacement, type LayerPlacement } from '../../parallel/allreduce-placement.js';
import type { Communicator } from '../../parallel/communicator.js';
import {
  usesExpertParallel,
  usesSequenceParallel,
  type ParallelLayout,
} from '../../parallel/parallel-layout.js';
import type { Tensor } from '../../tensor/tensor.js';
import { attentionBlock } from './attention-block.js';
import { traceGroup, type AllReduceTrace } from './allreduce-trace.js';
import { expertParallelFfn } from './expert-parallel-moe.js';
import { mlpHidden, moeBlock } from './ffn-block.js';
import {
  allocKvCache,
  kvTensorDtype,
  type KvCache,
  type KvCacheDtype,
  type KvScales,
} from './kv-cache.js';
import { ResidualStream } from './residual-stream.js';
import { StepContext } from './step-context.js';
import type { LayerWeights, ModelWeights } from './weights.js';

export interface ForwardOutput {
  /** [R, V] float32 logits of the batch's logit rows (host memory). */
  readonly logits: Float32Array;
  readonly numRows: number;
  /** MoE layer index -> [T, K'] routed ids, when the batch asked for them. */
  readonly routedExperts: Record<string, Int32Array>;
}

export interface ModelParallelOptions {
  /** This rank's layout; default: tp over the communicator's ranks. */
  readonly layout?: ParallelLayout;
  /** Where each layer's FFN reduction happens; default `--allreduce-fusion dense`. */
  readonly placement?: readonly LayerPlacement[];
  /** Fused-versus-native trace of every deferred reduction (measurement only). */
  readonly trace?: AllReduceTrace;
  /** `--kv-cache-dtype` resolved (default bf16). */
  readonly kvCacheDtype?: KvCacheDtype;
  /** Per-layer K/V scales of an FP8 cache (the checkpoint's, else 1.0 for every layer). */
  readonly kvScales?: readonly KvScales[];
}

/**
 * MiniMax-M3 text model (shared/design/minimax-m3.md §2). Shapes: T tokens, D hidden.
 * Pre-norm decoder; the residual stream r is added inside each norm. Collectives happen at
 * named points only: around each sub-layer (ResidualStream), inside the expert-parallel MoE,
 * in `reduceAddNorm` for deferred FFN reductions, and in the LM head.
 */
export class MiniMaxM3Model {
  readonly layout: ParallelLayout;
  readonly placement: readonly LayerPlacement[];
  readonly trace: AllReduceTrace | undefined;
  readonly kvCacheDtype: KvCacheDtype;
  readonly kvScales: readonly KvScales[];

  constructor(
    readonly cfg: ModelConfig,
    readonly weights: ModelWeights,
    readonly backend: Backend,
    readonly comm: Communicator,
    o: ModelParallelOptions = {},
  ) {
    this.layout = o.layout ?? { tpRank: comm.rank, tpSize: comm.worldSize };
    if (this.layout.tpSize !== comm.worldSize || this.layout.tpRank !== comm.rank)
      throw new Error(
        `layout tp rank ${this.layout.tpRank}/${this.layout.tpSize} does not match communicator rank ${comm.rank}/${comm.worldSize}`,
      );
    this.placement = o.placement ?? planAllReducePlacement(cfg, this.layout, 'dense');
    this.trace = o.trace;
    this.kvCacheDtype = o.kvCacheDtype ?? 'bf16';
    this.kvScales = o.kvScales ?? [];
    if (this.kvCacheDtype === 'fp8_e4m3') {
      const { numHeads, numKvHeads, headDim } = cfg;
      backend.checkKvCacheDtype?.(kvTensorDtype(this.kvCacheDtype), {
        numHeads,
        numKvHeads,
        headDim,
      });
    }
  }

  /** This rank's paged KV cache of `numPages` pages, in `kvCacheDtype`. */
  allocKv(numPages: number, pageSize: number): KvCache {
    return allocKvCache(
      this.backend,
      this.cfg,
      this.layout,
      numPages,
      pageSize,
      this.kvCacheDtype,
      this.kvScales,
    );
  }

  async forward(batch: ForwardBatch, kv: KvCache): Promise<ForwardOutput> {
    return this.run(batch, kv, (ctx, y) => this.lmHead(ctx, y));
  }

  /**
   * Whether `batch`'s forward may be recorded into a CUDA graph: every op only enqueues device
   * work with shapes fixed by the batch's size. Not when the step reads the device on the host
   * (expert parallelism plans its dispatch from the routes; captured routed experts; the
   * all-reduce trace; a backend's MoE that plans from the routes: W8A8 experts at prefill
   * sizes) or talks to other ranks.
   */
  capturable(batch: ForwardBatch): boolean {
    const T = batch.seqs.reduce((n, s) => n + s.numNew, 0);
    const moeOk = this.weights.layers.every(
      (l) => !l.moe || (this.backend.moeCapturable?.(T, l.moe.experts) ?? true),
    );
    return (
      this.comm.worldSize === 1 &&
      !usesExpertParallel(this.layout) &&
      this.trace === undefined &&
      batch.captureRoutedExperts !== true &&
      moeOk
    );
  }

  /**
   * The forward with the logits left on the device: [R, V] f32 into the first R rows of
   * `logits` (single rank). Enqueues work only (no host reads) when `capturable(batch)`.
   */
  async forwardInto(
    batch: ForwardBatch,
    kv: KvCache,
    logits: Tensor,
  ): Promise<Record<string, Int32Array>> {
    if (this.comm.worldSize !== 1) throw new Error('forwardInto: single rank only');
    const out = await this.run(batch, kv, (ctx, y) => {
      const R = ctx.meta.numLogitRows;
      const rows = ctx.scratch([R, this.cfg.hiddenSize]); // [R, D]
      this.backend.gatherLogitRows(rows, y, ctx.meta);
      this.backend.matmul(this.backend.rows(logits, 0, R), rows, this.weights.lmHead); // [R, V]
      return Promise.resolve({});
    });
    return out.routedExperts;
  }

  private async run<H>(
    batch: ForwardBatch,
    kv: KvCache,
    head: (ctx: StepContext, y: Tensor) => Promise<H>,
  ): Promise<H & { routedExperts: Record<string, Int32Array> }> {
    const b = this.backend;
    const ctx = new StepContext(this.cfg, b, this.comm, b.prepareBatch(batch));
    this.trace?.beginStep();
    try {
      const rs = new ResidualStream(ctx, usesSequenceParallel(this.layout));
      const D = this.cfg.hiddenSize;
      const r = ctx.scratch([rs.numRows, D]); // [rows, D] residual stream, starts at zero
      const a = ctx.scratch([rs.numRows, D]); // [rows, D] normalised input of a sub-layer
      let h = rs.embed(this.weights.embed); // [rows, D] sub-layer output
      let deferred = false; // h still holds a partial sum left for the next norm
      for (let i = 0; i < this.cfg.numLayers; i++) {
        const w = this.weights.layers[i]!;
        await this.reduceAddNorm(ctx, i - 1, { a, r, h, w: w.inputNorm }, deferred);
        const attn = attentionBlock(ctx, w.attn, kv.layers[i]!, await rs.gather(a));
        h = await rs.project(attn, w.attn.oProj); // o_proj with its reduction
        b.addRmsNorm(a, r, h, w.postAttnNorm, this.cfg.rmsNormEps);
        deferred = this.placement[i]?.reduction === 'deferred';
        h = await this.ffn(ctx, rs, i, w, a, deferred);
      }
      const last = this.cfg.numLayers - 1;
      await this.reduceAddNorm(ctx, last, { a, r, h, w: this.weights.norm }, deferred);
      const y = await rs.gather(a); // [T, D]: the one all-gather before the LM head under SP
      return { ...(await head(ctx, y)), routedExperts: ctx.routedExperts };
    } finally {
      ctx.release();
    }
  }

  /**
   * r += Σ_ranks h (when `reduce`, the deferred FFN all-reduce of layer `source`), then
   * a = Gemma-RMSNorm(r). With `reduce` false it is the plain residual add + norm. This is
   * the one place a fused all-reduce + residual + norm kernel goes; both paths implement the
   * definition of `parallel/reduction-semantics.ts` (float32 rank-order sums, float32 residual
   * add, one rounding, then the norm), so the deferred path equals the immediate one bit for
   * bit. With a trace, the call also runs the native sequence and records the difference.
   */
  private async reduceAddNorm(
    ctx: StepContext,
    source: number,
    t: { a: Tensor; r: Tensor; h: Tensor; w: Tensor },
    reduce: boolean,
  ): Promise<void> {
    if (reduce && this.trace) {
      const isSparse = this.cfg.moeLayers[source] === true;
      const norm = source + 1 < this.cfg.numLayers ? `layer ${source + 1} input` : 'final';
      const group = traceGroup(isSparse, usesExpertParallel(this.layout));
      return this.trace.reduceAddNorm(ctx, { layer: source, isSparse, group, norm }, t);
    }
    // The communicator's fused kernel where it has one (CUDA IPC): the same bits in one step.
    if (reduce && this.comm.allReduceAddRmsNorm)
      return this.comm.allReduceAddRmsNorm(t.a, t.r, t.h, t.w, this.cfg.rmsNormEps);
    if (reduce) await this.comm.allReduce(t.h);
    this.backend.addRmsNorm(t.a, t.r, t.h, t.w, this.cfg.rmsNormEps);
  }

  /** The FFN sub-layer of layer i on this rank's rows a; returns its (maybe partial) output. */
  private async ffn(
    ctx: StepContext,
    rs: ResidualStream,
    i: number,
    w: LayerWeights,
    a: Tensor,
    defer: boolean,
  ): Promise<Tensor> {
    if (w.moe && usesExpertParallel(this.layout))
      return expertParallelFfn(ctx, rs, i, w.moe, a, defer);
    const x = await rs.gather(a);
    if (!w.moe) return rs.project(mlpHidden(ctx, w.mlp!, x), w.mlp!.down, defer); // down_proj
    const part = rs.partialOutput();
    moeBlock(ctx, i, w.moe, x, part.out);
    return rs.reduce(part.all, defer);
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
    // outputs their ops write whole: no zeroing (at B=32 the logits are 393 KB a step)
    const rows = ctx.output([R, D]); // [R, D]
    b.gatherLogitRows(rows, y, ctx.meta);
    const local = ctx.output([R, Vl], 'f32'); // [R, V/tp]
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
