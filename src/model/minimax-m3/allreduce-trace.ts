import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Backend } from '../../backend/backend.js';
import {
  maxAbsDiff,
  reduceAddNormRows,
  type ReductionVariant,
} from '../../parallel/reduction-semantics.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { StepContext } from './step-context.js';

export interface AllReduceTraceOptions {
  /** Folder of the `rank<r>.jsonl` files (created; this rank's file is truncated). */
  readonly dir: string;
  /** The fused arithmetic under test; `exact` is the definition itself. */
  readonly variant: ReductionVariant;
}

/** One line of `rank<r>.jsonl` (shared/design/architecture.md §4, plus step and variant). */
export interface TraceLine {
  readonly step: number;
  /** The layer whose FFN output is reduced at this call (seed 000's `layer_id`). */
  readonly layer_id: number;
  /** The norm the reduction is fused into: the next layer's input norm or the final norm. */
  readonly norm: string;
  readonly is_sparse: boolean;
  readonly group: string;
  readonly rank: number;
  readonly world_size: number;
  readonly shape: readonly number[];
  /** The storage dtype the arithmetic rounds to (float32 on the CPU backend). */
  readonly dtype: string;
  readonly variant: ReductionVariant;
  readonly residual_max_diff: number;
  readonly norm_max_diff: number;
  /** max |r'| of the native residual: a bf16 ulp there is at most max |r'| · 2^-7. */
  readonly residual_max_abs: number;
}

/** What the model knows about a deferred call. */
export interface FusedCallSite {
  readonly layer: number;
  readonly isSparse: boolean;
  readonly group: string;
  readonly norm: string;
}

/**
 * Fused-versus-native trace (seed 000, issue 5). At every deferred reduction the step runs
 * twice on the same input: natively (all-reduce, then residual add, then norm, as the
 * immediate path does) and fused (`reduceAddNormRows` of `variant` on every rank's partial,
 * all-gathered first as a one-shot kernel reads its peers' buffers). Each call appends one
 * line with the max |fused − native| of the residual and of the normalised output; the forward
 * then continues with the fused results, as a server with the fused kernel would.
 */
export class AllReduceTrace {
  private readonly file: string;
  private step = -1;

  constructor(
    readonly o: AllReduceTraceOptions,
    readonly rank: number,
  ) {
    mkdirSync(o.dir, { recursive: true });
    this.file = join(o.dir, `rank${rank}.jsonl`);
    writeFileSync(this.file, '');
  }

  /** Called once at the start of every forward step. */
  beginStep(): void {
    this.step++;
  }

  /** a, r ← the fused step of `h` (this rank's partial) into r; writes the trace line. */
  async reduceAddNorm(
    ctx: StepContext,
    site: FusedCallSite,
    t: { a: Tensor; r: Tensor; h: Tensor; w: Tensor },
  ): Promise<void> {
    const { backend: b, comm, cfg } = ctx;
    const residualIn = b.readF32(t.r);
    const partials = await gatherPartials(ctx, t.h);
    // Native: the immediate path's collective and the backend's add + norm, in place.
    await comm.allReduce(t.h);
    b.addRmsNorm(t.a, t.r, t.h, t.w, cfg.rmsNormEps);
    const native = { r: b.readF32(t.r), a: b.readF32(t.a) };
    const fused = await this.fused(ctx, t, residualIn, partials);
    this.write({
      step: this.step,
      layer_id: site.layer,
      norm: site.norm,
      is_sparse: site.isSparse,
      group: site.group,
      rank: comm.rank,
      world_size: comm.worldSize,
      shape: t.h.shape,
      dtype: activationRounding(b, t.r) === 'bf16' ? 'bfloat16' : 'float32',
      variant: this.o.variant,
      residual_max_diff: maxAbsDiff(fused.r, native.r),
      norm_max_diff: maxAbsDiff(fused.a, native.a),
      residual_max_abs: native.r.reduce((m, x) => Math.max(m, Math.abs(x)), 0),
    });
  }

  /**
   * The fused side on the same partial and residual: the communicator's fused kernel when it
   * has one and the variant is the definition (`exact`), so the trace compares the kernel the
   * server runs; otherwise the variant's one-shot arithmetic on the host. Leaves r and a set.
   */
  private async fused(
    ctx: StepContext,
    t: { a: Tensor; r: Tensor; h: Tensor; w: Tensor },
    residualIn: Float32Array,
    partials: Float32Array[],
  ): Promise<{ r: Float32Array; a: Float32Array }> {
    const { backend: b, comm, cfg } = ctx;
    if (this.o.variant === 'exact' && comm.allReduceAddRmsNorm) {
      b.write(t.r, residualIn);
      b.write(t.h, partials[comm.rank]!);
      await comm.allReduceAddRmsNorm(t.a, t.r, t.h, t.w, cfg.rmsNormEps);
      return { r: b.readF32(t.r), a: b.readF32(t.a) };
    }
    // Fused: the variant's one-shot arithmetic on the same partials and residual.
    const fusedR = residualIn;
    reduceAddNormRows({
      partials,
      residual: fusedR,
      out: new Float32Array(residualIn.length),
      weight: b.readF32(t.w),
      eps: cfg.rmsNormEps,
      variant: this.o.variant,
      activation: activationRounding(b, t.r),
    });
    // the definition's norm is the backend's (its float32 SIMD norm, not the host's float64 one)
    b.write(t.r, fusedR);
    b.rmsNorm(t.a, t.r, t.w, cfg.rmsNormEps);
    return { r: fusedR, a: b.readF32(t.a) };
  }

  private write(line: TraceLine): void {
    appendFileSync(this.file, JSON.stringify(line) + '\n');
  }
}

/** Every rank's partial h [T, D], in rank order, on the host (one all-gather). */
async function gatherPartials(ctx: StepContext, h: Tensor): Promise<Float32Array[]> {
  const W = ctx.comm.worldSize;
  const T = h.shape[0]!;
  const all = ctx.scratch([W * T, ...h.shape.slice(1)], h.dtype); // [W·T, D]
  await ctx.comm.allGather(all, h);
  const host = ctx.backend.readF32(all);
  const n = host.length / W;
  return Array.from({ length: W }, (_, q) => host.subarray(q * n, (q + 1) * n));
}

/** Activations round to what the backend stores them in (the CPU keeps every float as f32). */
function activationRounding(b: Backend, t: Tensor): 'f32' | 'bf16' {
  return b.storageDtype(t.dtype) === 'bf16' ? 'bf16' : 'f32';
}

/** The seed's group names: the TP group for dense layers, the MoE's group for sparse ones. */
export function traceGroup(isSparse: boolean, ep: boolean): string {
  if (!isSparse) return 'tp';
  return ep ? 'moe_ep' : 'moe_tp';
}
