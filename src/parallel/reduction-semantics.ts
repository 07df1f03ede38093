import { rmsNormRows } from '../backend/cpu/ops/norm.js';
import { chunkRange } from './comm-stats.js';

/**
 * The one definition of an FFN output reduction followed by the residual add and the next
 * Gemma RMSNorm (issue 5, "exact residual arithmetic"). Given rank q's partial sum h_q, the
 * residual r and the norm weight w:
 *
 *   s  = ((h_0 + h_1) + h_2) + … + h_{W−1}    float32, rank order 0, 1, …, W−1
 *   r' = round_act(r + s)                     residual added in float32, ONE rounding to the
 *                                             activation dtype (no-op for float32 storage)
 *   a  = GemmaRMSNorm(r'; w)                  the backend's norm, read from the rounded r'
 *
 * The immediate (unfused) path implements it as `Communicator.allReduce` (float32 sums in rank
 * order, every rank the same bits) followed by `Backend.addRmsNorm`; the deferred (fused) path
 * must give the same bits on the same inputs. `reduceAddNormRows` is this definition written
 * out on host arrays, one element at a time as a one-shot fused kernel would compute it.
 *
 * A backend that stores activations in bf16 (CUDA) keeps h in bf16, so its all-reduce writes
 * round_bf16(s) back into h before the add: r' = round_act(r + round_h(s)). `sumRounding`
 * states that storage ('f32', the default, is the definition above); the CUDA IPC kernels —
 * unfused and fused alike — compute exactly this, checked bit for bit on the GPU.
 *
 * `bf16-vendor` is NOT a serving path: it is the arithmetic seed 000 found in the vendor's
 * fused kernel, kept to measure how far such a reduction strays from the definition — each
 * partial rounded to bf16, summed in ring order with a bf16 rounding after every hop, the
 * residual added in bf16.
 */
export type ReductionVariant = 'exact' | 'bf16-vendor';

export const REDUCTION_VARIANTS: readonly ReductionVariant[] = ['exact', 'bf16-vendor'];

/** The dtype the reduced residual is rounded to once: the activation storage dtype. */
export type ActivationRounding = 'f32' | 'bf16';

export function parseReductionVariant(s: string): ReductionVariant {
  if ((REDUCTION_VARIANTS as readonly string[]).includes(s)) return s as ReductionVariant;
  throw new Error(`reduction variant must be one of ${REDUCTION_VARIANTS.join(', ')} (got "${s}")`);
}

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** x rounded to the nearest bf16 value (ties to even), as a number. NaN stays NaN. */
export function roundToBf16(x: number): number {
  f32Scratch[0] = x;
  const bits = u32Scratch[0]!;
  if ((bits & 0x7fffffff) > 0x7f800000) return x;
  u32Scratch[0] = ((bits + 0x7fff + ((bits >>> 16) & 1)) & 0xffff0000) >>> 0;
  return f32Scratch[0]!;
}

function rounder(to: ActivationRounding): (x: number) => number {
  return to === 'bf16' ? roundToBf16 : Math.fround;
}

export interface ReduceAddNormRows {
  /** Each rank's partial sum [n] (n = rows · D), indexed by rank. */
  readonly partials: readonly Float32Array[];
  /** [n] in/out: r before, r' after. */
  readonly residual: Float32Array;
  /** [n] the normalised rows a. */
  readonly out: Float32Array;
  /** [D] Gemma RMSNorm weight. */
  readonly weight: Float32Array;
  readonly eps: number;
  readonly variant: ReductionVariant;
  /** What the exact variant rounds r' to once (float32 on the CPU backend). */
  readonly activation: ActivationRounding;
  /** What the all-reduced sum is stored as before the add (h's dtype; default 'f32'). */
  readonly sumRounding?: ActivationRounding;
}

/** One reduce + residual add + Gemma RMSNorm step on host arrays, by `o.variant`. */
export function reduceAddNormRows(o: ReduceAddNormRows): void {
  const n = o.residual.length;
  for (const p of o.partials)
    if (p.length !== n) throw new Error(`reduceAddNormRows: partial of ${p.length}, expected ${n}`);
  if (o.variant === 'exact')
    exactResidual(o.partials, o.residual, rounder(o.activation), rounder(o.sumRounding ?? 'f32'));
  else vendorResidual(o.partials, o.residual);
  rmsNormRows(o.out, o.residual, o.weight, o.eps);
}

/** r ← round_act(r + round_sum(Σ_q h_q)), the sum in float32 rank order, the add in float32. */
function exactResidual(
  partials: readonly Float32Array[],
  residual: Float32Array,
  round: (x: number) => number,
  roundSum: (x: number) => number,
): void {
  for (let i = 0; i < residual.length; i++)
    residual[i] = round(Math.fround(residual[i]! + roundSum(rankOrderSum(partials, i))));
}

/** Σ_q partials[q][i] in float32, rank order 0, 1, …, W−1: every all-reduce's arithmetic. */
export function rankOrderSum(partials: readonly Float32Array[], i: number): number {
  let s = partials[0]![i]!;
  for (let q = 1; q < partials.length; q++) s = Math.fround(s + partials[q]![i]!);
  return s;
}

/**
 * The all-reduce of `partials` by the definition, rounded once to the output's dtype. Summed
 * rank by rank into a Float32Array (each store rounds the double sum of two floats to float32,
 * which is the float32 sum), the same arithmetic as `rankOrderSum` element by element.
 */
export function allReduceRows(
  partials: readonly Float32Array[],
  to: ActivationRounding,
): Float32Array {
  const out = Float32Array.from(partials[0]!);
  for (let q = 1; q < partials.length; q++) {
    const p = partials[q]!;
    for (let i = 0; i < out.length; i++) out[i] = out[i]! + p[i]!;
  }
  if (to === 'bf16') for (let i = 0; i < out.length; i++) out[i] = roundToBf16(out[i]!);
  return out;
}

/**
 * r ← bf16(bf16(r) + s) with s the ring reduce-scatter sum of bf16 partials: chunk c of the
 * tensor starts at rank c+1 and travels the ring back to rank c, rounded to bf16 after each add.
 */
function vendorResidual(partials: readonly Float32Array[], residual: Float32Array): void {
  const W = partials.length;
  const n = residual.length;
  for (let c = 0; c < W; c++) {
    const [start, end] = chunkRange(n, W, c);
    for (let i = start; i < end; i++) {
      let s = roundToBf16(partials[(c + 1) % W]![i]!);
      for (let hop = 2; hop <= W; hop++)
        s = roundToBf16(s + roundToBf16(partials[(c + hop) % W]![i]!));
      residual[i] = roundToBf16(roundToBf16(residual[i]!) + s);
    }
  }
}

/** max |a − b| (Infinity when either holds a NaN where the other does not). */
export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (Number.isNaN(x) || Number.isNaN(y)) {
      if (Number.isNaN(x) !== Number.isNaN(y)) return Infinity;
      continue;
    }
    m = Math.max(m, Math.abs(x - y));
  }
  return m;
}
