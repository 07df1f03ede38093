/**
 * A seeded xoshiro128** stream for random checkpoints. One stream per tensor, keyed by
 * (seed, tensor name), so a tensor's values do not depend on dtype, sharding or order.
 */
export class RandomSource {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number, key = '') {
    // splitmix32 spreads a small seed and the key hash over the 128-bit state.
    let x = (Math.imul(seed | 0, 0x9e3779b9) ^ fnv1a(key)) >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) | 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next() | 1; // never the all-zero state
  }

  /** One uniform 32-bit integer. */
  nextU32(): number {
    const r = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return r;
  }

  /**
   * Fills `out` with mean + U(−a, a), a = std·√3 (uniform with the given standard deviation:
   * far cheaper than Box-Muller, which matters for multi-GB checkpoints).
   */
  fillUniform(out: Float32Array, std: number, mean = 0): void {
    const a = std * Math.sqrt(3);
    const k = (2 * a) / 2 ** 32;
    const base = mean - a;
    // The state lives in locals inside the hot loop; V8 keeps them in registers.
    let { s0, s1, s2, s3 } = this;
    for (let i = 0; i < out.length; i++) {
      const r = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
      const t = s1 << 9;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = (s3 << 11) | (s3 >>> 21);
      out[i] = base + r * k;
    }
    this.s0 = s0;
    this.s1 = s1;
    this.s2 = s2;
    this.s3 = s3;
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
