/** murmur3's 32-bit finaliser: spreads every input bit over the output. */
export function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/**
 * The xoshiro128** generator: 128 bits of state, the same sequence on every platform. The
 * engine's per-request sampler RNG and the random-checkpoint writer both extend it; each
 * decides how a seed becomes the four state words.
 */
export class Xoshiro128 {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  protected constructor(words: readonly [number, number, number, number]) {
    [this.s0, this.s1, this.s2, this.s3] = words;
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1; // never the all-zero state
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
   * Fills `out` from `table` with two values per draw (low and high 16 bits). The generator
   * is inlined with its state in locals, which V8 keeps in registers: this is the hot loop
   * of multi-GB random checkpoints.
   */
  protected fillFromTable<T extends Float32Array | Uint16Array>(out: T, table: T): void {
    let { s0, s1, s2, s3 } = this;
    const n = out.length;
    for (let i = 0; i < n; i += 2) {
      const r = Math.imul(rotl(Math.imul(s1, 5), 7), 9);
      const t = s1 << 9;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = (s3 << 11) | (s3 >>> 21);
      out[i] = table[r & 0xffff]!;
      if (i + 1 < n) out[i + 1] = table[r >>> 16]!;
    }
    [this.s0, this.s1, this.s2, this.s3] = [s0, s1, s2, s3];
  }
}
