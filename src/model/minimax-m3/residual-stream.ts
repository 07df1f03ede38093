import type { Tensor } from '../../tensor/tensor.js';
import { tokenShard } from '../../parallel/parallel-layout.js';
import type { StepContext } from './step-context.js';

/**
 * Where the residual stream of one step lives and the collectives that move a sub-layer's
 * input and output between that layout and the full sequence (shared/design §3).
 *   - TP: every rank holds all T rows; a sub-layer's row-parallel partial output is summed
 *     in place by an all-reduce.
 *   - SP (seed 001): rank r holds the token shard rows [r·⌈T/W⌉, …) of a sequence padded to
 *     W·⌈T/W⌉ rows (pad rows stay zero); a sub-layer all-gathers its input and
 *     reduce-scatters its output.
 */
export class ResidualStream {
  /** Tokens of the step. */
  readonly numTokens: number;
  /** Rows this rank holds: T, or the SP shard size ⌈T/W⌉. */
  readonly numRows: number;
  /** First token of this rank's shard and how many of its rows are real (not padding). */
  readonly shardStart: number;
  readonly shardCount: number;
  /** Buffers reused by every sub-layer of the step (each is consumed before it is reused). */
  private readonly buffers: Partial<Record<'gathered' | 'partial' | 'reduced', Tensor>> = {};

  constructor(
    private readonly ctx: StepContext,
    readonly sp: boolean,
  ) {
    const T = ctx.numTokens;
    this.numTokens = T;
    const s = sp ? tokenShard(T, ctx.comm.worldSize, ctx.comm.rank) : null;
    this.numRows = s ? s.size : T;
    this.shardStart = s ? s.start : 0;
    this.shardCount = s ? s.count : T;
  }

  /** Rows of all W shards together: W·⌈T/W⌉ under SP, T otherwise. */
  get paddedTokens(): number {
    return this.sp ? this.numRows * this.ctx.comm.worldSize : this.numTokens;
  }

  /**
   * The rows of this rank's [rows, D] tensors that are its own tokens: the real rows of its SP
   * shard, or (replicated TP residual) rows [r·⌈T/W⌉, …) of the sequence.
   */
  ownRows(): { start: number; count: number } {
    if (this.sp) return { start: 0, count: this.shardCount };
    return tokenShard(this.numTokens, this.ctx.comm.worldSize, this.ctx.comm.rank);
  }

  /** This rank's rows of the token embeddings [rows, D]. */
  embed(table: Tensor): Tensor {
    const full = this.ctx.scratch([this.paddedTokens, this.ctx.cfg.hiddenSize]);
    this.ctx.backend.embedding(this.tokens(full), table, this.ctx.meta);
    return this.sp ? this.ctx.backend.rows(full, this.shardStart, this.numRows) : full;
  }

  /** The full-sequence input [T, D] of a sub-layer from this rank's rows (SP: all-gather). */
  async gather(a: Tensor): Promise<Tensor> {
    if (!this.sp) return a;
    const full = this.buffer('gathered', this.paddedTokens);
    await this.ctx.comm.allGather(full, a); // [W·⌈T/W⌉, D]
    return this.tokens(full);
  }

  /**
   * The buffer for a sub-layer's full-sequence partial output: `out` [T, D] is what the
   * sub-layer writes; `all` [padded, D] is what `reduce` sums. Pad rows are never written,
   * so they stay zero.
   */
  partialOutput(): { out: Tensor; all: Tensor } {
    const all = this.buffer('partial', this.paddedTokens);
    return { out: this.tokens(all), all };
  }

  /**
   * Sums a partial output over ranks into this rank's rows (all-reduce in place, or SP
   * reduce-scatter into a new [rows, D] tensor). With `defer` (TP only) the all-reduce is left
   * for the next `reduceAddNorm`.
   */
  async reduce(all: Tensor, defer = false): Promise<Tensor> {
    const comm = this.ctx.comm;
    if (!this.sp) {
      if (!defer && comm.worldSize > 1) await comm.allReduce(all);
      return all;
    }
    const h = this.buffer('reduced', this.numRows);
    await comm.reduceScatter(h, all);
    return h;
  }

  /**
   * A row-parallel projection x [T, K] · wᵀ (o_proj, the dense down_proj) with its reduction:
   * under SP one `matmulReduceScatter` where the communicator has it (seed 001's GEMM +
   * reduce-scatter, the same bits as the GEMM then `reduce`), else the GEMM into the partial
   * output then `reduce(all, defer)`.
   */
  async project(x: Tensor, w: Tensor, defer = false): Promise<Tensor> {
    const { backend: b, comm } = this.ctx;
    const part = this.partialOutput();
    if (this.sp && comm.matmulReduceScatter) {
      const h = this.buffer('reduced', this.numRows);
      // Blocks only where the backend's GEMM keeps a row's bits whatever the row count.
      const rowInvariantFrom = b.matmulRowInvariantFrom?.(w) ?? Infinity;
      const gemm = (o: Tensor, xs: Tensor, ws: Tensor) => b.matmul(o, xs, ws);
      await comm.matmulReduceScatter(h, part.all, x, w, gemm, rowInvariantFrom);
      return h;
    }
    b.matmul(part.out, x, w);
    return this.reduce(part.all, defer);
  }

  private buffer(name: 'gathered' | 'partial' | 'reduced', rows: number): Tensor {
    return (this.buffers[name] ??= this.ctx.scratch([rows, this.ctx.cfg.hiddenSize]));
  }

  /** The first T rows of a padded [W·⌈T/W⌉, …] tensor. */
  private tokens(full: Tensor): Tensor {
    return this.sp ? this.ctx.backend.rows(full, 0, this.numTokens) : full;
  }
}
