/**
 * The bf16x3 split of f32 values, on the host: the definition kernels/bf16x3.cu's
 * split_bf16x3 implements bit for bit (gpu-check --only router compares the two), unit-tested
 * in split-bf16x3.test.ts.
 *
 * For a finite f32 w: W1 = bf16(w), W2 = bf16(w − W1), W3 = bf16(w − W1 − W2), bf16() rounding
 * to nearest even. Each residual is exact in f32 (w − W1 keeps at most the 16 low bits of w's
 * significand, and so on), so W1 + W2 + W3 = w exactly whenever W3's bits lie inside bf16's
 * range: for |w| ≥ 2^-110 (f32's 24-bit significand ends above bf16's smallest subnormal,
 * 2^-133). Below that, |W1 + W2 + W3 − w| ≤ 2^-134. A w that rounds up past bf16's largest
 * finite value (|w| ≥ 2^128 − 2^119) takes W1 and W2 truncated toward zero instead, so finite
 * weights never make an Inf part or an Inf W1 + W2. Non-finite w gives (bf16(w), 0, 0): the
 * product stays what f32 would give (the loader rejects such weights anyway, by name).
 */
import { bf16ToF32, f32ToBf16 } from '../../tensor/dtype.js';

/** bf16 bits of W1, W2, W3 for each value: parts[i], parts[n + i], parts[2n + i]. */
export function splitBf16x3(w: Float32Array): Uint16Array {
  const n = w.length;
  const parts = new Uint16Array(3 * n);
  for (let i = 0; i < n; i++) {
    const [a, b, c] = splitOne(w[i]!);
    parts[i] = a;
    parts[n + i] = b;
    parts[2 * n + i] = c;
  }
  return parts;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function splitOne(v: number): [number, number, number] {
  f32[0] = v;
  const bits = u32[0]!;
  if ((bits & 0x7f800000) === 0x7f800000) return [f32ToBf16(v), 0, 0];
  const w1 = f32ToBf16(v);
  if ((w1 & 0x7fff) === 0x7f80) {
    // Rounded up past bf16's largest finite value: the top 8 and next 8 bits instead.
    const t1 = bits >>> 16;
    const r1 = Math.fround(v - bf16ToF32(t1));
    f32[0] = r1;
    const t2 = u32[0]! >>> 16;
    return [t1, t2, f32ToBf16(Math.fround(r1 - bf16ToF32(t2)))];
  }
  const r1 = Math.fround(v - bf16ToF32(w1)); // exact: the fround only retypes
  const w2 = f32ToBf16(r1);
  const w3 = f32ToBf16(Math.fround(r1 - bf16ToF32(w2)));
  return [w1, w2, w3];
}
