// Gemma RMSNorm, y = x / sqrt(mean(x^2) + eps) * (1 + w), computed in f32; and the fused
// residual form: residual += x (rounded to the residual's type), y = norm(residual).
// Rows of n = len(w) elements (n = head_dim gives the per-head q/k norm).
// Launch: *_block: grid (rows), block 256 (n >= 512); *_warp: grid (ceil(rows/8)), block 256,
// one warp per row. Type letters: out, x (or residual), w. Tested by test/gpu/gpu-check.ts.
// The sums of squares are explicit FMAs (__fmaf_rn) so that norm-rope-cache.cu, which spells
// the per-head norm the same way, gets these bits whatever the compiler would contract.
#include "common.cuh"
#include "norm-row.cuh"

template <typename TO, typename TX, typename TW>
__device__ void rms_block(TO* out, const TX* x, const TW* w, int n, float eps) {
  grid_dep_launch();  // the GEMM after a norm streams its weights meanwhile
  __shared__ float scratch[32];
  const long long row = blockIdx.x;
  const TX* xr = x + row * n;
  float ss = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) { const float v = ldf(xr + i); ss = __fmaf_rn(v, v, ss); }
  const float inv = rsqrtf(block_sum(ss, scratch) / n + eps);
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    stf(out + row * n + i, ldf(xr + i) * inv * (1.f + ldf(w + i)));
}

template <typename TO, typename TX, typename TW>
__device__ void rms_warp(TO* out, const TX* x, const TW* w, long long rows, int n, float eps) {
  grid_dep_launch();
  const long long row = blockIdx.x * 8LL + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const TX* xr = x + row * n;
  float ss = 0.f;
  for (int i = lane; i < n; i += 32) { const float v = ldf(xr + i); ss = __fmaf_rn(v, v, ss); }
  const float inv = rsqrtf(warp_sum(ss) / n + eps);
  for (int i = lane; i < n; i += 32) stf(out + row * n + i, ldf(xr + i) * inv * (1.f + ldf(w + i)));
}

#define RMS(S, TO, TX, TW)                                                                    \
  extern "C" __global__ void rmsnorm_block_##S(TO* out, const TX* x, const TW* w, int n,     \
                                               float eps) {                                   \
    rms_block(out, x, w, n, eps);                                                             \
  }                                                                                           \
  extern "C" __global__ void rmsnorm_warp_##S(TO* out, const TX* x, const TW* w,             \
                                              long long rows, int n, float eps) {             \
    rms_warp(out, x, w, rows, n, eps);                                                        \
  }
FOR_3TYPES(RMS)

// residual [rows, n] += x; out = norm(residual). Letters: residual (= out type), x, w.
// The row arithmetic is norm-row.cuh's, shared with the fused all-reduce (allreduce.cu).
template <typename TR, typename TX, typename TW>
__device__ void add_rms_block(TR* out, TR* res, const TX* x, const TW* w, int n, float eps) {
  grid_dep_launch();
  __shared__ float scratch[32];
  const long long row = blockIdx.x;
  const TX* xr = x + row * n;
  add_rms_row_block(out + row * n, res + row * n, w, n, eps, scratch,
                    [xr](int i) { return ldf(xr + i); });
}

template <typename TR, typename TX, typename TW>
__device__ void add_rms_warp(TR* out, TR* res, const TX* x, const TW* w, long long rows, int n,
                             float eps) {
  grid_dep_launch();
  const long long row = blockIdx.x * 8LL + (threadIdx.x >> 5);
  if (row >= rows) return;
  const TX* xr = x + row * n;
  add_rms_row_warp(out + row * n, res + row * n, w, n, eps, [xr](int i) { return ldf(xr + i); });
}

#define ADD_RMS(S, TR, TX, TW)                                                                \
  extern "C" __global__ void add_rmsnorm_block_##S(TR* out, TR* res, const TX* x, const TW* w, \
                                                   int n, float eps) {                        \
    add_rms_block(out, res, x, w, n, eps);                                                    \
  }                                                                                           \
  extern "C" __global__ void add_rmsnorm_warp_##S(TR* out, TR* res, const TX* x, const TW* w,  \
                                                  long long rows, int n, float eps) {         \
    add_rms_warp(out, res, x, w, rows, n, eps);                                               \
  }
FOR_3TYPES(ADD_RMS)
