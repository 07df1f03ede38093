import { mix32, Xoshiro128 } from '../../util/xoshiro128.js';
import { f32ToBf16Into } from '../../tensor/dtype.js';

/**
 * A seeded xoshiro128** stream for random checkpoints. One stream per tensor, keyed by
 * (seed, tensor name), so a tensor's values do not depend on dtype, sharding or order.
 */
export class RandomSource extends Xoshiro128 {
  constructor(seed: number, key = '') {
    super(seedWords(seed, key));
  }

  /**
   * Fills `out` with mean + U(−a, a), a = std·√3: uniform with the given standard deviation,
   * on a grid of 65536 levels so that one 32-bit draw gives two values through a table.
   * Far cheaper than Box-Muller, which matters for multi-GB checkpoints.
   */
  fillUniform(out: Float32Array, std: number, mean = 0): void {
    this.fillFromTable(out, uniformTable(std, mean).f32);
  }

  /** The same values as `fillUniform`, rounded to bf16 bits (round to nearest even). */
  fillUniformBf16(out: Uint16Array, std: number, mean = 0): void {
    this.fillFromTable(out, uniformTable(std, mean).bf16);
  }
}

/** splitmix32 spreads a small seed and the key hash over the 128-bit state. */
function seedWords(seed: number, key: string): [number, number, number, number] {
  let x = (Math.imul(seed | 0, 0x9e3779b9) ^ fnv1a(key)) >>> 0;
  const next = (): number => {
    x = (x + 0x9e3779b9) | 0;
    return mix32(x);
  };
  return [next(), next(), next(), next() | 1];
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

export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
