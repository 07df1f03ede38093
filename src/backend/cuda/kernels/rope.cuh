// Partial NeoX RoPE arithmetic, shared by elementwise.cu's rope_* and norm-rope-cache.cu, so the
// fused kernel gives the unfused one's bits: the angle pos * theta^(-2i/R) in double (positions
// reach 10^5..10^6), rounded to float once, and the rotation of the pair (i, i + R/2) in f32.
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
__device__ __forceinline__ float rope_lo(float x1, float x2, float c, float s) { return x1 * c - x2 * s; }
/** The second element of a rotated pair. */
__device__ __forceinline__ float rope_hi(float x1, float x2, float c, float s) { return x2 * c + x1 * s; }
