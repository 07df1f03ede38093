/** Small helpers shared by the GPU check scripts (random data, bf16 rounding, error norms, tables). */
import { bf16ToF32, f32ToBf16 } from '../../src/tensor/dtype.js';

/** A seeded uniform(-a, a) generator (mulberry32). */
export function rng(seed: number): (a?: number) => number {
  let s = seed >>> 0;
  return (a = 1) => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1) * a;
  };
}

export function randArray(n: number, seed: number, a = 1, bf16 = true): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = bf16 ? bf16ToF32(f32ToBf16(r(a))) : r(a);
  return out;
}

/**
 * x [rows, K] with each 128-input group of a row scaled by its own power of two (2^-6 … 2^6,
 * exact for bf16 values): activations whose per-group scales differ, so a kernel that reads
 * another row's or group's scale (q8's split x) fails its check.
 */
export function groupScaled(x: Float32Array, K: number): Float32Array {
  const out = new Float32Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const r = Math.floor(i / K);
    const g = Math.floor((i % K) / 128);
    out[i] = x[i]! * 2 ** (((r * 5 + g * 3) % 13) - 6);
  }
  return out;
}

/** ‖a − b‖ / ‖b‖ (NaN anywhere gives Infinity). */
export function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < b.length; i++) {
    const d = a[i]! - b[i]!;
    if (Number.isNaN(d)) return Infinity;
    num += d * d;
    den += b[i]! * b[i]!;
  }
  return Math.sqrt(num / Math.max(den, 1e-30));
}

export function maxAbs(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < b.length; i++)
    m = Math.max(m, Math.abs(a[i]! - b[i]!) || (Number.isNaN(a[i]!) ? Infinity : 0));
  return m;
}

export function countDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let n = 0;
  for (let i = 0; i < b.length; i++) if (a[i] !== b[i]) n++;
  return n;
}

export function argmax(a: ArrayLike<number>, off = 0, n = a.length): number {
  let best = off;
  for (let i = off + 1; i < off + n; i++) if (a[i]! > a[best]!) best = i;
  return best - off;
}

export interface Row {
  readonly check: string;
  readonly value: string;
  readonly limit: string;
  readonly pass: boolean;
}

export function printTable(title: string, rows: readonly Row[]): void {
  const w = Math.max(...rows.map((r) => r.check.length), 10);
  console.log(`\n${title}`);
  for (const r of rows)
    console.log(
      `  ${r.pass ? 'PASS' : 'FAIL'}  ${r.check.padEnd(w)}  ${r.value.padStart(12)}  (limit ${r.limit})`,
    );
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}
