/**
 * A per-request constraint on which token may come next (structured outputs, forced tool
 * calls). The engine calls, for every row it samples for the request: `prepare()` (if present,
 * awaited together with the step's forward, so asynchronous mask work overlaps it), then
 * `nextTokenMask()` before sampling and `accept(token)` after. When `isTerminated()` turns
 * true after an accept, the request finishes with "stop".
 *
 * Every sampler (host and GPU) applies the mask the same way: a token whose bit is clear gets
 * logit -inf before logit_bias, penalties and temperature.
 */
export interface LogitsConstraint {
  /**
   * ceil(V/32) words; bit t of word t>>>5 set = token t allowed. null = unconstrained this
   * step. Words past the vocabulary are ignored.
   */
  nextTokenMask(): Uint32Array | null;
  /** Advances past the sampled token; throws if the constraint cannot accept it. */
  accept(tokenId: number): void;
  isTerminated(): boolean;
  /** Completes any asynchronous work behind the next `nextTokenMask()`. */
  prepare?(): Promise<void>;
}

/** Whether `mask` allows token `t`. */
export function maskAllows(mask: Uint32Array, t: number): boolean {
  return ((mask[t >>> 5]! >>> (t & 31)) & 1) === 1;
}

/** Sets every disallowed logit of one row [V] to -inf, in place; returns how many stay allowed. */
export function applyTokenMask(x: Float32Array, mask: Uint32Array): number {
  if (mask.length < Math.ceil(x.length / 32)) {
    throw new Error(
      `token mask has ${mask.length} words, the vocabulary needs ${Math.ceil(x.length / 32)}`,
    );
  }
  let allowed = 0;
  for (let w = 0; w < mask.length && w * 32 < x.length; w++) {
    const bits = mask[w]!;
    const end = Math.min(32, x.length - w * 32);
    if (bits === 0xffffffff && end === 32) {
      allowed += 32;
      continue;
    }
    for (let b = 0; b < end; b++) {
      if ((bits >>> b) & 1) allowed++;
      else x[w * 32 + b] = -Infinity;
    }
  }
  return allowed;
}

/** A mask allowing exactly `ids` in a vocabulary of `vocabSize`. */
export function maskOf(vocabSize: number, ids: Iterable<number>): Uint32Array {
  const mask = new Uint32Array(Math.ceil(vocabSize / 32));
  for (const t of ids) mask[t >>> 5] = mask[t >>> 5]! | (1 << (t & 31));
  return mask;
}

/** How many of the first `vocabSize` tokens `mask` allows. */
export function countAllowed(mask: Uint32Array, vocabSize: number): number {
  let n = 0;
  for (let w = 0; w < mask.length && w * 32 < vocabSize; w++) {
    let bits = mask[w]!;
    const end = Math.min(32, vocabSize - w * 32);
    if (end < 32) bits &= (2 ** end - 1) >>> 0;
    bits = bits - ((bits >>> 1) & 0x55555555);
    bits = (bits & 0x33333333) + ((bits >>> 2) & 0x33333333);
    n += (Math.imul((bits + (bits >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24) & 0xff;
  }
  return n;
}
