import { randomInt } from 'node:crypto';
import { mix32, Xoshiro128 } from '../util/xoshiro128.js';

/** Four distinct state words from a 53-bit integer seed. */
function seedWords(seed: number): [number, number, number, number] {
  if (!Number.isSafeInteger(seed)) throw new Error(`Rng: seed must be a safe integer, got ${seed}`);
  let x = mix32((seed >>> 0) ^ mix32((Math.floor(seed / 2 ** 32) >>> 0) ^ 0x9e3779b9));
  const next = (): number => {
    x = (x + 0x9e3779b9) >>> 0;
    return mix32(x);
  };
  return [next(), next(), next(), next()];
}

/**
 * xoshiro128** seeded from a 53-bit integer: small, fast and the same sequence on every
 * platform and run, so a request with a seed reproduces its tokens exactly.
 */
export class Rng extends Xoshiro128 {
  constructor(seed: number) {
    super(seedWords(seed));
  }

  /** Uniform in [0, 1) with 53 random bits. */
  next(): number {
    const a = this.nextU32() >>> 5;
    const b = this.nextU32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }
}

/** A fresh seed for requests that do not set one. */
export function randomSeed(): number {
  return randomInt(0, 2 ** 47);
}
