// The bf16x3 f32 matmul (matmul-bf16x3.ts): an f32 weight W kept also as three bf16 parts
// W1 + W2 + W3 = W (split-f32-weight.ts), so that bf16 activations x multiply it on the bf16
// tensor cores: every product x * Wi is exact in f32, one cuBLAS GEMM gives the three
// products side by side, and sum_bf16x3 adds them.
//
// split_bf16x3(parts, stride, w, n): for i < n, parts[i], parts[stride + i] and
// parts[2 * stride + i] get W1, W2, W3 of w[i] (split-bf16x3.ts is the definition, bit for
// bit: nearest-even parts of the exact f32 residuals; truncated parts where W1 would round to
// Inf; non-finite w as (bf16(w), 0, 0)). `stride` is the element distance between the parts
// (the whole weight's element count, also for a row range of it).
// sum_bf16x3_{b,f}(out, p, M, N): out[m, n] = (p[m, n] + p[m, N + n]) + p[m, 2N + n] for the
// GEMM output p [M, 3N] (f32), out [M, N] bf16 or f32: that fixed order, so a row's logits do
// not depend on the launch.
// Launch: both grid-stride over their elements (n, M * N), block 256.
// Tested by test/gpu/router-check.ts (gpu-check --only router): the device parts equal
// splitBf16x3 of the weight bit for bit after write, fillRandom and a checkpoint upload; the
// logits match the CPU's f32 GEMM at M = 300 and 8192.
#include "common.cuh"

__device__ __forceinline__ bf16_t trunc_bf16(float v) {
  return (bf16_t)(__float_as_uint(v) >> 16);
}

extern "C" __global__ void split_bf16x3(bf16_t* parts, long long stride, const float* w,
                                        long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const float v = w[i];
    const unsigned bits = __float_as_uint(v);
    bf16_t w1, w2, w3;
    if ((bits & 0x7f800000u) == 0x7f800000u) {
      // Inf as itself, NaN quieted as the host's f32ToBf16 does.
      w1 = (bf16_t)((bits >> 16) | ((bits & 0x007fffffu) ? 0x40u : 0u));
      w2 = 0;
      w3 = 0;
    } else {
      w1 = f2bf(v);
      if ((w1 & 0x7fffu) == 0x7f80u) {
        w1 = trunc_bf16(v);  // rounded up past bf16's largest finite value
        const float r1 = v - bf2f(w1);
        w2 = trunc_bf16(r1);
        w3 = f2bf(r1 - bf2f(w2));
      } else {
        const float r1 = v - bf2f(w1);  // exact in f32, as is the next residual
        w2 = f2bf(r1);
        w3 = f2bf(r1 - bf2f(w2));
      }
    }
    parts[i] = w1;
    parts[stride + i] = w2;
    parts[2 * stride + i] = w3;
  }
}

#define SUM_BF16X3(S, TO)                                                                     \
  extern "C" __global__ void sum_bf16x3_##S(TO* out, const float* p, long long M, int N) {    \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < M * N;           \
         i += (long long)gridDim.x * blockDim.x) {                                            \
      const long long m = i / N;                                                              \
      const float* row = p + m * 3 * N + (i - m * N);                                         \
      stf(out + i, (row[0] + row[N]) + row[2 * N]);                                           \
    }                                                                                         \
  }
SUM_BF16X3(b, bf16_t)
SUM_BF16X3(f, float)
