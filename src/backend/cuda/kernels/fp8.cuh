// E4M3 (float8 e4m3fn: bias 7, no infinities, 0x7f/0xff NaN, max finite 448) and UE8M0
// conversions shared by fp8-gemm.cu (FP8 weights) and the FP8 KV cache (elementwise.cu's
// write_cache_8*, the attention and MSA kernels' FP8 loads). Include after common.cuh.
#pragma once

/** An E4M3 code in memory (FP8 weights, FP8 KV cache). */
typedef unsigned char e4m3_t;

/** E4M3 (fn: no infinities, 0x7f/0xff NaN) -> f32, exact. */
__device__ __forceinline__ float e4m3_to_f32(unsigned b) {
  const unsigned em = b & 0x7fu;
  float v = em >= 8u ? __uint_as_float((em + (120u << 3)) << 20) : (float)em * 0.001953125f;
  if (em == 0x7fu) v = __uint_as_float(0x7fc00000u);
  return __uint_as_float(__float_as_uint(v) | ((b & 0x80u) << 24));
}
/**
 * f32 -> E4M3 code, round to nearest even, saturating finite values and infinities at ±448,
 * NaN kept (cvt .satfinite; host twin: fp8-quantize.ts f32ToE4m3).
 */
__device__ __forceinline__ e4m3_t f32_to_e4m3(float v) {
  unsigned short pair;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.f), "f"(v));
  return (e4m3_t)(pair & 0xffu);
}
/** An E4M3 code read as its value (ldf's FP8 overload: the MSA index-key cache). */
__device__ __forceinline__ float ldf(const e4m3_t* p) { return e4m3_to_f32(*p); }
/** UE8M0 -> 2^(s-127); 255 is NaN. */
__device__ __forceinline__ float e8m0_to_f32(unsigned s) {
  if (s == 255u) return __uint_as_float(0x7fc00000u);
  return s == 0u ? __uint_as_float(0x00400000u) : __uint_as_float(s << 23);
}
/** 4 codes (one 32-bit word) -> 4 bf16 (2 words), times `mul`. */
__device__ __forceinline__ void widen4(unsigned w, float mul, unsigned* out) {
  const float a = e4m3_to_f32(w & 0xffu) * mul, b = e4m3_to_f32((w >> 8) & 0xffu) * mul;
  const float c = e4m3_to_f32((w >> 16) & 0xffu) * mul, d = e4m3_to_f32(w >> 24) * mul;
  out[0] = (unsigned)f2bf(a) | ((unsigned)f2bf(b) << 16);
  out[1] = (unsigned)f2bf(c) | ((unsigned)f2bf(d) << 16);
}
/** cp.async of 8 bytes (8 E4M3 codes) into shared memory; `valid` false fills zeros. */
__device__ __forceinline__ void cp_async8(void* smem, const void* gmem, bool valid) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  const int sz = valid ? 8 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(s), "l"(gmem), "r"(sz));
}
/** 8 consecutive cache elements as 8 bf16 (16 bytes): bf16 as stored, E4M3 widened exactly. */
__device__ __forceinline__ uint4 ld8_bf16(const bf16_t* p) {
  return *reinterpret_cast<const uint4*>(p);
}
__device__ __forceinline__ uint4 ld8_bf16(const e4m3_t* p) {
  const uint2 c = *reinterpret_cast<const uint2*>(p);
  uint4 r;
  widen4(c.x, 1.f, &r.x);
  widen4(c.y, 1.f, &r.z);
  return r;
}
/**
 * Codes 0,1 (lo) and 2,3 (hi) of w as bf16 pairs of their values, exact: the bits placed into
 * bf16's (value x 2^-120), then one bf16x2 FMA by 2^120 (+ -0). The decode GEMMs' widening
 * (fp8-gemv.cu, fp8-wgmma.cu).
 */
__device__ __forceinline__ void e4m3x4_widen_bf16(unsigned w, unsigned& lo, unsigned& hi) {
  unsigned a, b;
  asm("prmt.b32 %0, %1, 0, %2;" : "=r"(a) : "r"(w), "r"(0x1404u));
  asm("prmt.b32 %0, %1, 0, %2;" : "=r"(b) : "r"(w), "r"(0x3424u));
  lo = (a & 0x80008000u) | ((a >> 4) & 0x07f007f0u);
  hi = (b & 0x80008000u) | ((b >> 4) & 0x07f007f0u);
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(lo) : "r"(lo), "r"(0x7b807b80u), "r"(0x80008000u));
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(hi) : "r"(hi), "r"(0x7b807b80u), "r"(0x80008000u));
}
