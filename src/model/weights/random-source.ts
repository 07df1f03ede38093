import { f32ToBf16Into } from './safetensors-dtype.js';

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

  private setState(s0: number, s1: number, s2: number, s3: number): void {
    this.s0 = s0;
    this.s1 = s1;
    this.s2 = s2;
    this.s3 = s3;
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
   * Fills `out` with mean + U(−a, a), a = std·√3: uniform with the given standard deviation,
   * on a grid of 65536 levels so that one 32-bit draw gives two values through a table.
   * Far cheaper than Box-Muller, which matters for multi-GB checkpoints.
   */
  fillUniform(out: Float32Array, std: number, mean = 0): void {
    const table = uniformTable(std, mean).f32;
    // xoshiro128** inlined with its state in locals, which V8 keeps in registers.
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
    this.setState(s0, s1, s2, s3);
  }

  /** The same values as `fillUniform`, rounded to bf16 bits (round to nearest even). */
  fillUniformBf16(out: Uint16Array, std: number, mean = 0): void {
    const table = uniformTable(std, mean).bf16;
    // xoshiro128** inlined with its state in locals, which V8 keeps in registers.
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
    this.setState(s0, s1, s2, s3);
  }
}

const tables = new Map<string, { f32: Float32Array; bf16: Uint16Array }>();

/** Level i of U(mean − a, mean + a) is the centre of the i-th of 65536 equal bins. */
function uniformTable(std: number, mean: number): { f32: Float32Array; bf16: Uint16Array } {
  const key = `${std}/${mean}`;
  let t = tables.get(key);
  if (!t) {
    const a = std * Math.sqrt(3);
    const f32 = new Float32Array(65536);
    for (let i = 0; i < 65536; i++) f32[i] = mean - a + ((i + 0.5) * 2 * a) / 65536;
    const bf16 = new Uint16Array(65536);
    f32ToBf16Into(f32, bf16);
    t = { f32, bf16 };
    tables.set(key, t);
  }
  return t;
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
