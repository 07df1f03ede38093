import { f32ToBf16, bf16ToF32 } from '../../tensor/dtype.js';

/** The CUDA kernel's integer hash (kernels/elementwise.cu `hash32`), in 32-bit JS arithmetic. */
function hash32(x: number): number {
  x = (x ^ (x >>> 16)) >>> 0;
  x = Math.imul(x, 0x7feb352d) >>> 0;
  x = (x ^ (x >>> 15)) >>> 0;
  x = Math.imul(x, 0x846ca68b) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

/**
 * out[i] = scale · U(−1, 1) from a hash of (seed, i): bit for bit what the CUDA backend's
 * `fill_random` kernel stores (offset 0), so a seeded dummy model has the same weights on
 * both backends. `bf16` rounds each value to bf16 (round to nearest even) as the GPU stores it.
 */
export function fillRandomHost(
  out: Float32Array,
  seed: number,
  scale: number,
  bf16: boolean,
): void {
  const s = Math.fround(scale);
  const seedHash = hash32(seed >>> 0); // i < 2^32 here, so the high word term is 0
  for (let i = 0; i < out.length; i++) {
    const h = hash32((i ^ seedHash) >>> 0);
    const u = Math.fround((h >>> 8) * (1 / 8388608) - 1);
    const v = Math.fround(s * u);
    out[i] = bf16 ? bf16ToF32(f32ToBf16(v)) : v;
  }
}
