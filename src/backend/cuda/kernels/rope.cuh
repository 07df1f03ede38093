// Partial NeoX RoPE arithmetic, shared by elementwise.cu's rope_* and norm-rope-cache.cu, so the
// fused kernel gives the unfused one's bits: the angle pos * theta^(-2i/R) in double (positions
// reach 10^5..10^6), rounded to float once, and the rotation of the pair (i, i + R/2) in f32.
// The rotation is spelled with __fmul_rn/__fsub_rn/__fadd_rn: with plain operators the compiler
// may contract x1 * c - x2 * s into either of two FMAs, and did so differently in the two
// kernels (1 ulp in f32, 4 of 97M bf16 values; W3 of 2026-12-02). Two products rounded, then
// their difference rounded, as the CPU backend computes it.
#pragma once

__device__ __forceinline__ void rope_angle(int pos, int i, int R, double theta, float* c,
                                           float* s) {
  const double inv = pow(theta, -2.0 * i / (double)R);
  double sd, cd;
  sincos((double)pos * inv, &sd, &cd);
  *c = (float)cd;
  *s = (float)sd;
}
/** The first element of a rotated pair (x1 at i, x2 at i + R/2). */
__device__ __forceinline__ float rope_lo(float x1, float x2, float c, float s) {
  return __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, s));
}
/** The second element of a rotated pair. */
__device__ __forceinline__ float rope_hi(float x1, float x2, float c, float s) {
  return __fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, s));
}
