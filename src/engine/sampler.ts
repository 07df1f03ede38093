import type { SamplingParams } from './engine-types.js';
import { applyTokenMask } from './logits-constraint.js';
import {
  applyLogitBias,
  applyPenalties,
  argmax,
  logSumExp,
  topIndices,
  truncate,
} from './logits-processing.js';
import { randomSeed, Rng } from './rng.js';

export interface SampleResult {
  readonly tokenId: number;
  readonly logprob?: number;
  readonly topLogprobs?: readonly { readonly tokenId: number; readonly logprob: number }[];
}

/** Below this temperature sampling is greedy (vLLM uses the same epsilon). */
const GREEDY_EPS = 1e-5;

/** Why `p` is invalid, or null. The server validates first; this guards the engine itself. */
export function checkSamplingParams(p: SamplingParams): string | null {
  if (!(p.temperature >= 0) || !Number.isFinite(p.temperature)) {
    return `temperature must be >= 0, got ${p.temperature}`;
  }
  if (!(p.topP > 0 && p.topP <= 1)) return `top_p must be in (0, 1], got ${p.topP}`;
  if (!Number.isInteger(p.topK) || p.topK < -1)
    return `top_k must be -1, 0 or positive, got ${p.topK}`;
  if (!(p.minP >= 0 && p.minP <= 1)) return `min_p must be in [0, 1], got ${p.minP}`;
  if (!Number.isFinite(p.presencePenalty)) return 'presence_penalty must be finite';
  if (!Number.isFinite(p.frequencyPenalty)) return 'frequency_penalty must be finite';
  if (!(p.repetitionPenalty > 0) || !Number.isFinite(p.repetitionPenalty)) {
    return `repetition_penalty must be > 0, got ${p.repetitionPenalty}`;
  }
  if (p.seed !== null && !Number.isSafeInteger(p.seed))
    return `seed must be an integer, got ${p.seed}`;
  const bad = p.logitBias?.find(([t, b]) => !Number.isInteger(t) || t < 0 || !Number.isFinite(b));
  if (bad) return `logit_bias entry [${bad[0]}, ${bad[1]}] needs a token id >= 0 and a finite bias`;
  return null;
}

/**
 * Sampling state of one sequence: its RNG and the token counts the penalties need. The order
 * is vLLM's: a constraint's token mask (disallowed → -inf), logit_bias, penalties,
 * temperature, then min_p, top_k, top_p, then one uniform draw.
 *
 * Logprobs are the log-softmax of the processed logits (vLLM's `processed_logprobs`): after
 * the mask, logit_bias, penalties and temperature (temperature 0 counts as 1), before
 * min_p/top_k/top_p truncation, so they sum to 1 over the allowed tokens.
 */
export class SequenceSampler {
  private readonly rng: Rng;
  private readonly promptTokens: ReadonlySet<number>;
  private readonly outputCounts = new Map<number, number>();

  constructor(
    readonly params: SamplingParams,
    promptIds: readonly number[],
    seed: number = params.seed ?? randomSeed(),
  ) {
    this.rng = new Rng(seed);
    this.promptTokens = params.repetitionPenalty !== 1 ? new Set(promptIds) : new Set();
  }

  get isGreedy(): boolean {
    return this.params.temperature < GREEDY_EPS;
  }

  /** Picks the next token from one logits row [V] and records it for the penalties. */
  sample(
    row: Float32Array,
    numLogprobs: number | null,
    mask: Uint32Array | null = null,
  ): SampleResult {
    const x = Float32Array.from(row);
    if (mask !== null && applyTokenMask(x, mask) === 0) {
      throw new Error('the logits constraint allows no token');
    }
    if (this.params.logitBias) applyLogitBias(x, this.params.logitBias);
    applyPenalties(x, this.params, this.promptTokens, this.outputCounts);
    // top_k = 1 keeps only the maximum whatever min_p/top_p say: take it before the temperature
    // scale, which can round two nearly equal (denormal) logits to a tie.
    const top1 = !this.isGreedy && this.params.topK === 1 ? argmax(x) : -1;
    if (!this.isGreedy && this.params.temperature !== 1) {
      const inv = 1 / this.params.temperature;
      for (let i = 0; i < x.length; i++) x[i] = x[i]! * inv;
    }
    const tokenId = this.isGreedy ? argmax(x) : top1 >= 0 ? top1 : this.draw(x);
    this.outputCounts.set(tokenId, (this.outputCounts.get(tokenId) ?? 0) + 1);
    if (numLogprobs === null) return { tokenId };
    const lse = logSumExp(x);
    return {
      tokenId,
      logprob: x[tokenId]! - lse,
      topLogprobs: topIndices(x, numLogprobs).map((t) => ({ tokenId: t, logprob: x[t]! - lse })),
    };
  }

  private draw(x: Float32Array): number {
    const c = truncate(x, this.params);
    const target = this.rng.next() * c.total;
    let cum = 0;
    for (let j = 0; j < c.ids.length; j++) {
      cum += c.weights[j]!;
      if (target < cum) return c.ids[j]!;
    }
    // Rounding can leave target a hair above the last sum: take the last token with weight.
    for (let j = c.ids.length - 1; j >= 0; j--) if (c.weights[j]! > 0) return c.ids[j]!;
    return c.ids[0]!;
  }
}
