// The activations of the skinny GEMMs' q8 and h8 kernels (skinny-gemm.cu), converted once per
// GEMM input: skinny_split_x (q8: x as two E4M3 terms and a power of two per 128 inputs) and
// skinny_half_x (h8: x as f16 times a power of two per 128 inputs). Both one warp per 128
// inputs of a row, grid ceil(rows * K/128 / 8), block 256; K % 128 == 0. Tested by
// test/gpu/split-check.ts, bit for bit against host twins, and through the GEMM checks.
#include "common.cuh"
#include "fp8.cuh"

// x [rows, K] bf16 split for Q8, one warp per 128 inputs of a row (group gi = row * K/128 + kt):
// s = 2^(e-8) with amax = m * 2^e, m in [0.5, 1) (so amax / s in [128, 256)); v = x / s
// (exact); hi = E4M3(v), lo = E4M3(v - hi) (round to nearest even). hi + lo = v exactly when
// |v| >= 1/4 (v has bf16's 8 significant bits, hi the top 4, the rest fits lo), else within
// 2^-10: |(hi + lo) s - x| <= amax * 2^-17 for every element. xq[gi] = 128 hi then 128 lo
// codes, xs[gi] = s. NaN stays NaN (its code); an infinite amax makes s NaN.
// grid ceil(rows * K/128 / 8), block 256.
extern "C" __global__ void __launch_bounds__(256)
    skinny_split_x(const bf16_t* x, int rows, int K, unsigned char* xq, float* xs) {
  const long long gi = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);
  if (gi >= (long long)rows * (K / 128)) return;
  const int lane = threadIdx.x & 31;
  const uint2 raw = *reinterpret_cast<const uint2*>(x + gi * 128 + lane * 4);
  const float v[4] = {__uint_as_float(raw.x << 16), __uint_as_float(raw.x & 0xffff0000u),
                      __uint_as_float(raw.y << 16), __uint_as_float(raw.y & 0xffff0000u)};
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < 4; i++) amax = fmaxf(amax, fabsf(v[i]));
  amax = warp_max(amax);
  int e = 0;
  if (amax > 0.f && amax <= 3.402823466e38f) frexpf(amax, &e);
  const int E = amax > 0.f ? e - 8 : 0;
  unsigned hi = 0, lo = 0;
#pragma unroll
  for (int i = 0; i < 4; i++) {
    const float sv = ldexpf(v[i], -E);
    const e4m3_t h = f32_to_e4m3(sv);
    hi |= (unsigned)h << (8 * i);
    lo |= (unsigned)f32_to_e4m3(sv - e4m3_to_f32(h)) << (8 * i);
  }
  reinterpret_cast<unsigned*>(xq + gi * 256)[lane] = hi;
  reinterpret_cast<unsigned*>(xq + gi * 256 + 128)[lane] = lo;
  if (lane == 0) xs[gi] = amax > 3.402823466e38f ? __uint_as_float(0x7fc00000u) : ldexpf(1.f, E);
}

// x [rows, K] bf16 as f16 for H8, one warp per 128 inputs of a row (group gi = row * K/128 +
// kt): s = 2^E, E = max(e - 15, -126) with amax = m * 2^e, m in [0.5, 1) (amax / s < 2^15,
// inside f16's 65504); xh = f16(x / s), round to nearest even: exact where |x / s| >= 2^-14
// (f16's 11 significant bits hold bf16's 8), i.e. |x| >= amax * 2^-29, within s * 2^-25 <=
// amax * 2^-39 below (f16 subnormals). xs[gi] = s; amax 0: s = 1; NaN stays NaN, an infinite
// amax makes s NaN. grid ceil(rows * K/128 / 8), block 256.
extern "C" __global__ void __launch_bounds__(256)
    skinny_half_x(const bf16_t* x, int rows, int K, bf16_t* xh, float* xs) {
  grid_dep_launch();  // the GEMM after this may stream its weights meanwhile
  const long long gi = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);
  if (gi >= (long long)rows * (K / 128)) return;
  const int lane = threadIdx.x & 31;
  const uint2 raw = *reinterpret_cast<const uint2*>(x + gi * 128 + lane * 4);
  const float v[4] = {__uint_as_float(raw.x << 16), __uint_as_float(raw.x & 0xffff0000u),
                      __uint_as_float(raw.y << 16), __uint_as_float(raw.y & 0xffff0000u)};
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < 4; i++) amax = fmaxf(amax, fabsf(v[i]));
  amax = warp_max(amax);
  int e = 0;
  const bool finite = amax <= 3.402823466e38f;
  if (amax > 0.f && finite) frexpf(amax, &e);
  const int E = amax > 0.f ? max(e - 15, -126) : 0;
  unsigned h[2];
#pragma unroll
  for (int i = 0; i < 2; i++)
    asm("cvt.rn.f16x2.f32 %0, %1, %2;"
        : "=r"(h[i]) : "f"(ldexpf(v[2 * i + 1], -E)), "f"(ldexpf(v[2 * i], -E)));
  *reinterpret_cast<uint2*>(xh + gi * 128 + lane * 4) = make_uint2(h[0], h[1]);
  if (lane == 0) xs[gi] = finite ? ldexpf(1.f, E) : __uint_as_float(0x7fc00000u);
}
