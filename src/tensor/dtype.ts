/** Element types moeserve handles. `f8e4m3` and `u8` appear only in checkpoints. */
export type DType = 'f32' | 'f16' | 'bf16' | 'i32' | 'u8' | 'f8e4m3';

export const DTYPE_BYTES: Readonly<Record<DType, number>> = {
  f32: 4,
  f16: 2,
  bf16: 2,
  i32: 4,
  u8: 1,
  f8e4m3: 1,
};

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** bf16 bits -> float32 value (exact). */
export function bf16ToF32(bits: number): number {
  u32Scratch[0] = (bits & 0xffff) << 16;
  return f32Scratch[0]!;
}

/** float32 value -> bf16 bits, round to nearest even (NaN kept quiet). */
export function f32ToBf16(value: number): number {
  f32Scratch[0] = value;
  const x = u32Scratch[0]!;
  if ((x & 0x7f800000) === 0x7f800000 && (x & 0x007fffff) !== 0) return (x >>> 16) | 0x40;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

/** float32 -> bf16 bits, round to nearest even, NaN kept quiet (inlined for multi-GB writes and
 * cache rows). */
export function f32ToBf16Into(src: Float32Array, dst: Uint16Array): void {
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < src.length; i++) {
    const x = bits[i]!;
    dst[i] =
      (x & 0x7fffffff) > 0x7f800000 ? (x >>> 16) | 0x40 : (x + 0x7fff + ((x >>> 16) & 1)) >>> 16;
  }
}

/** IEEE half bits -> float32 value. */
export function f16ToF32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const man = bits & 0x3ff;
  if (exp === 0) return sign * man * 2 ** -24;
  if (exp === 31) return man ? NaN : sign * Infinity;
  return sign * (1 + man / 1024) * 2 ** (exp - 15);
}

/** float8 e4m3fn: bias 7, no infinities, 0x7f/0xff are NaN, max finite 448. */
export const F8E4M3_TABLE: Float32Array = (() => {
  const t = new Float32Array(256);
  for (let b = 0; b < 256; b++) {
    const sign = b & 0x80 ? -1 : 1;
    const e = (b >>> 3) & 0xf;
    const m = b & 0x7;
    if (e === 15 && m === 7) t[b] = NaN;
    else if (e === 0) t[b] = sign * (m / 8) * 2 ** -6;
    else t[b] = sign * (1 + m / 8) * 2 ** (e - 7);
  }
  return t;
})();

const E4M3_MAX = 448;

/**
 * float32 -> float8 e4m3fn code, round to nearest even, saturating at ±448 (no infinities),
 * NaN kept (0x7f): the device's cvt.rn.satfinite. `x` must be a float32 value (Math.fround).
 */
export function f32ToE4m3(x: number): number {
  if (Number.isNaN(x)) return 0x7f;
  const sign = x < 0 || Object.is(x, -0) ? 0x80 : 0;
  const a = Math.abs(x);
  if (a >= E4M3_MAX) return sign | 0x7e;
  if (a < 2 ** -6) return sign | roundHalfEven(a * 2 ** 9); // subnormals: m · 2^-9; 8 carries to 2^-6
  f32Scratch[0] = a;
  const u = u32Scratch[0]!;
  const e = (u >>> 23) - 127;
  const mant = u & 0x7fffff;
  let r = mant >>> 20;
  const rem = mant & 0xfffff;
  if (rem > 0x80000 || (rem === 0x80000 && (r & 1) === 1)) r++;
  return sign | Math.min(((e + 7) << 3) + r, 0x7e); // r = 8 carries into the exponent
}

function roundHalfEven(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  return d > 0.5 || (d === 0.5 && f % 2 === 1) ? f + 1 : f;
}
