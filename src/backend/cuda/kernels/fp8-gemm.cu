// FP8 weights (E4M3 codes with per-row group scales, tensor/fp8-weight.ts; layout
// [rows, ceil(K/G)]: BLK f32 scale_inv per G inputs, MX UE8M0 per G inputs) read as values:
// dequantization, the embedding lookup and block quantization. The FP8 GEMMs are
// skinny-gemm.cu's (decode, MoE tiles); prefill GEMMs run cuBLAS on the dequantized weight.
// Kernels:
//   fp8_dequant_<o>_<F>(out, W, S, n, K, G): grid-stride over n = rows*K (over n/16 groups
//       of 16 codes, one 128-bit load each, when K and G are multiples of 16), block 256:
//       out[i] = code * scale, stored as bf16 (b: the prefill path, then cuBLAS on the bf16
//       copy, and shapes the decode kernels do not take) or f32 (f: exact, for readF32).
//   fp8_embedding_<o>_<F>(out, W, S, G, ids, D): grid (T), block 256: out[t] = the
//       dequantized row ids[t] of an FP8 embedding table (--quantization fp8 quantizes it).
//   fp8_quantize_blk_b(codes, S, w, N, K): grid (ceil(K/128), ceil(N/128)), block 256: block FP8
//       of a bf16 [N, K] matrix, scale = amax/448 per 128x128 block (1 when amax = 0), codes
//       rn-satfinite(w / scale); the scale written to every row of the block (G = 128). The same
//       arithmetic as fp8-quantize.ts quantizeRows (f32 division, round to nearest even).
// No host reads, no allocation: graph-capturable. Tested by test/gpu/fp8-check.ts against the
// CPU backend on the same quantized weights, and quantize codes/scales against quantizeRows.
#include "common.cuh"
#include "mma.cuh"
#include "fp8.cuh"

__device__ __forceinline__ float fp8_scale(const void* S, long long i, bool mx) {
  return mx ? e8m0_to_f32(reinterpret_cast<const unsigned char*>(S)[i])
            : reinterpret_cast<const float*>(S)[i];
}

template <typename TO, bool MX>
__device__ void dequant(TO* out, const unsigned char* W, const void* S, long long n, int K, int G) {
  const int Kg = (K + G - 1) / G;
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long t0 = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if ((K & 15) == 0 && (G & 15) == 0) {
    // 16 codes per thread (one 128-bit load, one scale: G % 16 == 0), no division per element.
    const int K16 = K >> 4;
    for (long long i = t0; i < (n >> 4); i += stride) {
      const long long r = i / K16;
      const int k = (int)(i - r * K16) << 4;
      const float s = fp8_scale(S, r * Kg + k / G, MX);
      const uint4 c = reinterpret_cast<const uint4*>(W)[i];
      const unsigned w[4] = {c.x, c.y, c.z, c.w};
      float v[16];
#pragma unroll
      for (int j = 0; j < 16; j++) v[j] = e4m3_to_f32((w[j >> 2] >> (8 * (j & 3))) & 0xffu) * s;
      if constexpr (sizeof(TO) == 2) {
        uint4* o = reinterpret_cast<uint4*>(out + (i << 4));
        o[0] = make_uint4(pack2(v[0], v[1]), pack2(v[2], v[3]), pack2(v[4], v[5]), pack2(v[6], v[7]));
        o[1] = make_uint4(pack2(v[8], v[9]), pack2(v[10], v[11]), pack2(v[12], v[13]),
                          pack2(v[14], v[15]));
      } else {
        float4* o = reinterpret_cast<float4*>(out + (i << 4));
#pragma unroll
        for (int j = 0; j < 4; j++) o[j] = make_float4(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]);
      }
    }
    return;
  }
  for (long long i = t0; i < n; i += stride) {
    const long long r = i / K;
    const int k = (int)(i - r * K);
    stf(out + i, e4m3_to_f32(W[i]) * fp8_scale(S, r * Kg + k / G, MX));
  }
}
#define FP8_DEQUANT(O, TO, F, MXV)                                                           \
  extern "C" __global__ void fp8_dequant_##O##_##F(TO* out, const unsigned char* W,          \
                                                   const void* S, long long n, int K, int G) { \
    dequant<TO, MXV>(out, W, S, n, K, G);                                                    \
  }
FP8_DEQUANT(b, bf16_t, blk, false)
FP8_DEQUANT(b, bf16_t, mx, true)
FP8_DEQUANT(f, float, blk, false)
FP8_DEQUANT(f, float, mx, true)

// out[t, :] = table[ids[t], :] * scales: the embedding lookup of an FP8 table [V, D] (codes,
// scales [V, ceil(D/G)]), each value code * scale in f32, stored as bf16 or f32. grid (T),
// block 256.
template <typename TO, bool MX>
__device__ void embedding_fp8(TO* out, const unsigned char* W, const void* S, int G,
                              const int* ids, int D) {
  const long long row = ids[blockIdx.x];
  const int Dg = (D + G - 1) / G;
  for (int d = threadIdx.x; d < D; d += blockDim.x)
    stf(out + (long long)blockIdx.x * D + d,
        e4m3_to_f32(W[row * D + d]) * fp8_scale(S, row * Dg + d / G, MX));
}
#define FP8_EMBEDDING(O, TO, F, MXV)                                                          \
  extern "C" __global__ void fp8_embedding_##O##_##F(TO* out, const unsigned char* W,         \
                                                     const void* S, int G, const int* ids,    \
                                                     int D) {                                 \
    embedding_fp8<TO, MXV>(out, W, S, G, ids, D);                                             \
  }
FP8_EMBEDDING(b, bf16_t, blk, false)
FP8_EMBEDDING(b, bf16_t, mx, true)
FP8_EMBEDDING(f, float, blk, false)
FP8_EMBEDDING(f, float, mx, true)

extern "C" __global__ void __launch_bounds__(256) fp8_quantize_blk_b(unsigned char* codes,
                                                                     float* S, const bf16_t* w,
                                                                     int N, int K) {
  __shared__ float red[32];
  const int k0 = blockIdx.x * 128, r0 = blockIdx.y * 128;
  const int kn = min(128, K - k0), rn = min(128, N - r0);
  float amax = 0.f;
  for (int i = threadIdx.x; i < kn * rn; i += blockDim.x) {
    const long long idx = (long long)(r0 + i / kn) * K + k0 + i % kn;
    amax = fmaxf(amax, fabsf(bf2f(w[idx])));
  }
  amax = warp_max(amax);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = amax;
  __syncthreads();
  amax = threadIdx.x < (blockDim.x >> 5) ? red[threadIdx.x] : 0.f;
  amax = warp_max(amax);
  __syncthreads();
  if (threadIdx.x == 0) red[0] = amax;
  __syncthreads();
  amax = red[0];
  const float scale = amax > 0.f ? __fdiv_rn(amax, 448.f) : 1.f;
  const int Kg = (K + 127) / 128;
  for (int i = threadIdx.x; i < rn; i += blockDim.x) S[(long long)(r0 + i) * Kg + blockIdx.x] = scale;
  for (int i = threadIdx.x; i < kn * rn; i += blockDim.x) {
    const long long idx = (long long)(r0 + i / kn) * K + k0 + i % kn;
    const float q = __fdiv_rn(bf2f(w[idx]), scale);
    codes[idx] = f32_to_e4m3(q);
  }
}
