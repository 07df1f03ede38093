import { randomInt } from 'node:crypto';

/** murmur3's 32-bit finaliser: spreads every input bit over the output. */
function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/**
 * xoshiro128** seeded from a 53-bit integer: small, fast and the same sequence on every
 * platform and run, so a request with a seed reproduces its tokens exactly.
 */
export class Rng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number) {
    if (!Number.isSafeInteger(seed))
      throw new Error(`Rng: seed must be a safe integer, got ${seed}`);
    const lo = seed >>> 0;
    const hi = Math.floor(seed / 2 ** 32) >>> 0;
    // Four distinct words from (lo, hi); xoshiro must not start from all zeros.
    let x = mix32(lo ^ mix32(hi ^ 0x9e3779b9));
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      return mix32(x);
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
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
