// One row of the residual add + Gemma RMSNorm, the single definition shared by norm.cu's
// add_rmsnorm_* and allreduce.cu's fused all-reduce + add + norm, so both give the same bits:
//   r[i] = round_TR(r[i] + x(i)); ss = Σ r[i]^2 (per-thread strided, then the block/warp sum);
//   out[i] = r[i] * rsqrt(ss / n + eps) * (1 + w[i]).
// x(i) yields element i of the addend as float (a load, or a peer sum rounded to its dtype).
// Thread i of the block (or lane of the warp) owns elements i, i + stride, ...: callers must
// launch the same block size (256) for the same bits.
#pragma once
#include "common.cuh"

// The block form loads ROW_CHUNK of a thread's elements before it stores any: the compiler
// must assume the stores may alias later loads, so one element at a time serialises every
// load behind the previous store (2.4x the row's bandwidth time at D 6144). Per element and
// per thread the order of operations, and so every bit, is the one-at-a-time loop's.
#define ROW_CHUNK 4
template <typename TR, typename TW, typename LoadX>
__device__ __forceinline__ void add_rms_row_block(TR* out, TR* rr, const TW* w, int n, float eps,
                                                  float* scratch32, LoadX x) {
  const int step = blockDim.x;
  float ss = 0.f;
  for (int i0 = threadIdx.x; i0 < n; i0 += ROW_CHUNK * step) {
    float a[ROW_CHUNK], b[ROW_CHUNK];
#pragma unroll
    for (int u = 0; u < ROW_CHUNK; u++) {
      const int i = i0 + u * step;
      if (i < n) a[u] = ldf(rr + i), b[u] = x(i);
    }
#pragma unroll
    for (int u = 0; u < ROW_CHUNK; u++) {
      const int i = i0 + u * step;
      if (i >= n) break;
      const float v = roundto<TR>(a[u] + b[u]);
      stf(rr + i, v);
      ss += v * v;
    }
  }
  const float inv = rsqrtf(block_sum(ss, scratch32) / n + eps);
  for (int i0 = threadIdx.x; i0 < n; i0 += ROW_CHUNK * step) {
    float a[ROW_CHUNK], g[ROW_CHUNK];
#pragma unroll
    for (int u = 0; u < ROW_CHUNK; u++) {
      const int i = i0 + u * step;
      if (i < n) a[u] = ldf(rr + i), g[u] = ldf(w + i);
    }
#pragma unroll
    for (int u = 0; u < ROW_CHUNK; u++) {
      const int i = i0 + u * step;
      if (i < n) stf(out + i, a[u] * inv * (1.f + g[u]));
    }
  }
}

template <typename TR, typename TW, typename LoadX>
__device__ __forceinline__ void add_rms_row_warp(TR* out, TR* rr, const TW* w, int n, float eps,
                                                 LoadX x) {
  const int lane = threadIdx.x & 31;
  float ss = 0.f;
  for (int i = lane; i < n; i += 32) {
    const float v = roundto<TR>(ldf(rr + i) + x(i));
    stf(rr + i, v);
    ss += v * v;
  }
  const float inv = rsqrtf(warp_sum(ss) / n + eps);
  for (int i = lane; i < n; i += 32) stf(out + i, ldf(rr + i) * inv * (1.f + ldf(w + i)));
}
