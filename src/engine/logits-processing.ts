/**
 * Pure helpers over one row of logits [V]. Ties are always broken towards the lower token id,
 * so greedy, top-k = 1 and top_logprobs agree with each other.
 */

export interface Penalties {
  readonly presencePenalty: number;
  readonly frequencyPenalty: number;
  readonly repetitionPenalty: number;
}

/**
 * vLLM/OpenAI semantics, in place. Repetition (CTRL paper) covers prompt and output tokens:
 * positive logits are divided by it, negative ones multiplied. Frequency subtracts
 * count·penalty and presence subtracts the penalty once, both over output tokens only.
 */
export function applyPenalties(
  x: Float32Array,
  p: Penalties,
  promptTokens: ReadonlySet<number>,
  outputCounts: ReadonlyMap<number, number>,
): void {
  const rp = p.repetitionPenalty;
  if (rp !== 1) {
    const seen = new Set(promptTokens);
    for (const t of outputCounts.keys()) seen.add(t);
    for (const t of seen) {
      const v = x[t]!;
      x[t] = v > 0 ? v / rp : v * rp;
    }
  }
  if (p.frequencyPenalty === 0 && p.presencePenalty === 0) return;
  for (const [t, count] of outputCounts) {
    x[t] = x[t]! - p.frequencyPenalty * count - p.presencePenalty;
  }
}

/** OpenAI `logit_bias`, in place: each bias is added to its token's logit (ids < V). */
export function applyLogitBias(
  x: Float32Array,
  bias: ReadonlyArray<readonly [tokenId: number, bias: number]>,
): void {
  for (const [t, b] of bias) if (t < x.length) x[t] = x[t]! + b;
}

/** First index of the largest value. */
export function argmax(x: Float32Array): number {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i]! > x[best]!) best = i;
  return best;
}

/** log Σ exp(x), stable. */
export function logSumExp(x: Float32Array): number {
  let m = -Infinity;
  for (let i = 0; i < x.length; i++) if (x[i]! > m) m = x[i]!;
  if (m === -Infinity) return -Infinity;
  let s = 0;
  for (let i = 0; i < x.length; i++) s += Math.exp(x[i]! - m);
  return m + Math.log(s);
}

/** The n largest entries, descending (ties: lower id first). */
export function topIndices(x: Float32Array, n: number): number[] {
  const k = Math.min(n, x.length);
  if (k <= 0) return [];
  const out: number[] = [];
  for (let i = 0; i < x.length; i++) {
    const v = x[i]!;
    if (out.length === k && v <= x[out[k - 1]!]!) continue;
    // Insertion keeps earlier (lower) ids ahead of equal later ones.
    let j = out.length === k ? k - 1 : out.length;
    while (j > 0 && x[out[j - 1]!]! < v) {
      out[j] = out[j - 1]!;
      j--;
    }
    out[j] = i;
  }
  return out;
}

export interface Truncation {
  /** 0 or -1 = off. */
  readonly topK: number;
  /** 1 = off. */
  readonly topP: number;
  /** 0 = off. */
  readonly minP: number;
}

export interface Candidates {
  /** Kept token ids, most likely first. */
  readonly ids: number[];
  /** Their unnormalised probabilities exp(x - max). */
  readonly weights: number[];
  readonly total: number;
}

/**
 * The tokens sampling may pick, in vLLM's order: min_p against the top probability, then
 * top_k, then top_p over what is left (renormalised), always at least one token. Only the
 * head of the distribution is sorted: a candidate threshold is lowered (at most three times)
 * until it provably holds the kept set, so a 200k vocabulary rarely costs a full sort.
 */
export function truncate(x: Float32Array, t: Truncation): Candidates {
  const m = x[argmax(x)]!;
  const w = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) w[i] = Math.exp(x[i]! - m);
  // Weights are probabilities scaled so the top one is 1: min_p compares against minP itself.
  const floor = t.minP > 0 ? t.minP : 0;
  const eligible: number[] = [];
  for (let i = 0; i < w.length; i++) if (w[i]! >= floor) eligible.push(i);
  const k = t.topK > 0 ? Math.min(t.topK, eligible.length) : eligible.length;
  if (k === eligible.length && t.topP >= 1) return candidates(w, eligible);
  const eligibleMass = sum(w, eligible);
  for (const tau of [2 ** -10, 2 ** -24, floor]) {
    if (tau < floor) continue;
    const head = candidatesAbove(x, w, tau); // a prefix of the eligible tokens, sorted
    if (head.length >= k || tau === floor) {
      const kSet = head.slice(0, k);
      return candidates(w, nucleus(w, kSet, t.topP * sum(w, kSet)) ?? kSet);
    }
    // Without an effective top-k the renormalising mass is known, so a short head may do.
    const kept = k === eligible.length ? nucleus(w, head, t.topP * eligibleMass) : null;
    if (kept) return candidates(w, kept);
  }
  throw new Error('truncate: unreachable');
}

function candidates(w: Float64Array, ids: number[]): Candidates {
  return { ids, weights: ids.map((i) => w[i]!), total: sum(w, ids) };
}

function candidatesAbove(x: Float32Array, w: Float64Array, tau: number): number[] {
  const ids: number[] = [];
  for (let i = 0; i < w.length; i++) if (w[i]! >= tau) ids.push(i);
  return ids.sort((a, b) => x[b]! - x[a]! || a - b);
}

/** Shortest prefix of `sorted` whose mass reaches `target`, or null if it never does. */
function nucleus(w: Float64Array, sorted: number[], target: number): number[] | null {
  let cum = 0;
  for (let j = 0; j < sorted.length; j++) {
    cum += w[sorted[j]!]!;
    // A relative epsilon so topP = 1 keeps the whole set despite rounding in the sums.
    if (cum >= target * (1 - 1e-12)) return sorted.slice(0, j + 1);
  }
  return null;
}

function sum(w: Float64Array, ids: readonly number[]): number {
  let s = 0;
  for (const i of ids) s += w[i]!;
  return s;
}
