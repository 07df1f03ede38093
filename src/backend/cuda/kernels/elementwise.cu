// Row and element kernels: embedding gather, add, partial NeoX RoPE, paged KV write,
// SwiGLU-OAI, logit-row gather, column split, dtype conversion. Names end in type letters (b = bf16,
// f = f32, 8 = E4M3 codes): first the output, then the inputs.
// Launch: 1-D grids; row kernels take one block of 256 threads per row (grid.x = rows),
// element kernels a grid-stride loop. Tested by test/gpu/gpu-check.ts against the CPU backend.
#include "common.cuh"
#include "fp8.cuh"
#include "rope.cuh"

// out[t, :] = table[ids[t], :]; out [T, D], table [V, D]. grid (T), block 256.
template <typename TO, typename TT>
__device__ void embedding_impl(TO* out, const TT* table, const int* ids, int D) {
  const int t = blockIdx.x;
  const long long row = ids[t];
  for (int d = threadIdx.x; d < D; d += blockDim.x)
    stf(out + (long long)t * D + d, ldf(table + row * D + d));
}
#define EMB(S, TO, TT)                                                                        \
  extern "C" __global__ void embedding_##S(TO* out, const TT* table, const int* ids, int D) { \
    embedding_impl(out, table, ids, D);                                                        \
  }
FOR_2TYPES(EMB)

// out = a + b, n elements, grid-stride.
#define ADD(S, TO, TA, TB)                                                                    \
  extern "C" __global__ void add_##S(TO* out, const TA* a, const TB* b, long long n) {       \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;               \
         i += (long long)gridDim.x * blockDim.x)                                              \
      stf(out + i, ldf(a + i) + ldf(b + i));                                                  \
  }
FOR_3TYPES(ADD)

// In-place partial NeoX RoPE on x [T, H*Dh]: pairs (i, i+R/2) for i < R/2, angle
// pos * theta^(-2i/R) computed in double (positions reach 10^5..10^6). A thread takes pair i of
// ROPE_HEADS consecutive heads of one token, so the double pow and sincos (most of the cost:
// large angles take the slow argument reduction) run once per ROPE_HEADS heads.
// grid-stride over T*ceil(H/ROPE_HEADS)*(R/2).
#define ROPE_HEADS 8
template <typename T>
__device__ void rope_impl(T* x, const int* pos, int T_, int H, int Dh, int R, double theta) {
  const int half = R / 2, HG = (H + ROPE_HEADS - 1) / ROPE_HEADS;
  const long long n = (long long)T_ * HG * half;
  for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < n;
       idx += (long long)gridDim.x * blockDim.x) {
    const int i = idx % half;
    const long long tg = idx / half;  // t*HG + head group
    const int t = tg / HG, h0 = (tg % HG) * ROPE_HEADS;
    float cf, sf;
    rope_angle(pos[t], i, R, theta, &cf, &sf);
    for (int h = h0; h < min(H, h0 + ROPE_HEADS); h++) {
      T* p = x + ((long long)t * H + h) * Dh;
      const float x1 = ldf(p + i), x2 = ldf(p + i + half);
      stf(p + i, rope_lo(x1, x2, cf, sf));
      stf(p + i + half, rope_hi(x1, x2, cf, sf));
    }
  }
}
extern "C" __global__ void rope_b(bf16_t* x, const int* pos, int T, int H, int Dh, int R, double theta) {
  rope_impl(x, pos, T, H, Dh, R, theta);
}
extern "C" __global__ void rope_f(float* x, const int* pos, int T, int H, int Dh, int R, double theta) {
  rope_impl(x, pos, T, H, Dh, R, theta);
}

// cache [P*S, W] row slots[t] = x[t, :]. grid (T), block 256.
#define WRITE_CACHE(S, TC, TX)                                                                \
  extern "C" __global__ void write_cache_##S(TC* cache, const TX* x, const int* slots, int W) { \
    const int t = blockIdx.x;                                                                 \
    const long long slot = slots[t];                                                          \
    for (int d = threadIdx.x; d < W; d += blockDim.x)                                         \
      stf(cache + slot * W + d, ldf(x + (long long)t * W + d));                               \
  }
FOR_2TYPES(WRITE_CACHE)
// FP8 KV cache (--kv-cache-dtype fp8): row slots[t] = E4M3(x[t, :] / scale), IEEE f32 division,
// round to nearest even, saturating at +-448 (vLLM's scaled_fp8_quant; the CPU backend keeps
// the same code's value times scale). grid (T), block 256.
#define WRITE_CACHE_FP8(S, TX)                                                                 \
  extern "C" __global__ void write_cache_8##S(e4m3_t* cache, const TX* x, const int* slots,    \
                                              int W, float scale) {                            \
    const int t = blockIdx.x;                                                                  \
    const long long slot = slots[t];                                                           \
    for (int d = threadIdx.x; d < W; d += blockDim.x)                                          \
      cache[slot * W + d] = f32_to_e4m3(__fdiv_rn(ldf(x + (long long)t * W + d), scale));      \
  }
WRITE_CACHE_FP8(b, bf16_t)
WRITE_CACHE_FP8(f, float)

// SwiGLU-OAI on [gate | up] halves: gu [M, 2I] -> out [M, I].
__device__ __forceinline__ float swiglu_oai(float g, float u, float alpha, float limit) {
  g = fminf(g, limit);
  u = fminf(fmaxf(u, -limit), limit);
  return g / (1.f + expf(-alpha * g)) * (u + 1.f);
}
template <typename TO, typename TI>
__device__ __forceinline__ void swiglu_at(TO* out, const TI* gu, long long m, int i, int I,
                                          float alpha, float limit) {
  const TI* row = gu + m * 2 * I;
  stf(out + m * I + i, swiglu_oai(ldf(row + i), ldf(row + I + i), alpha, limit));
}
// Eight consecutive elements as floats: one 16-byte load per 8 bf16 values, two per 8 floats.
__device__ __forceinline__ void ld8f(const bf16_t* p, float (&v)[8]) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int j = 0; j < 4; j++) v[2 * j] = __uint_as_float(w[j] << 16), v[2 * j + 1] = __uint_as_float(w[j] & 0xffff0000u);
}
__device__ __forceinline__ void ld8f(const float* p, float (&v)[8]) {
  const float4 a = *reinterpret_cast<const float4*>(p), b = *reinterpret_cast<const float4*>(p + 4);
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
__device__ __forceinline__ void st8f(bf16_t* p, const float (&v)[8]) {
  uint4 u;
  u.x = (unsigned)f2bf(v[0]) | ((unsigned)f2bf(v[1]) << 16);
  u.y = (unsigned)f2bf(v[2]) | ((unsigned)f2bf(v[3]) << 16);
  u.z = (unsigned)f2bf(v[4]) | ((unsigned)f2bf(v[5]) << 16);
  u.w = (unsigned)f2bf(v[6]) | ((unsigned)f2bf(v[7]) << 16);
  *reinterpret_cast<uint4*>(p) = u;
}
__device__ __forceinline__ void st8f(float* p, const float (&v)[8]) {
  *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  *reinterpret_cast<float4*>(p + 4) = make_float4(v[4], v[5], v[6], v[7]);
}
// Below 2^31 elements the row/column split uses 32-bit division: the 64-bit one cost more
// than the activation itself (the kernel is otherwise bound by its 6 bytes per element).
// With I % 8 == 0 (every real shape; rows then start 16-byte aligned) a thread takes eight
// consecutive elements of a row with 16-byte loads and stores: each element's arithmetic is
// the scalar loop's, so the bits are too (W1 of 2026-12-02: 1.00 ms for the three dense
// layers at 8,192 tokens, 2.3x their bytes at copy bandwidth, with 2-byte accesses).
#define SWIGLU(S, TO, TI)                                                                      \
  extern "C" __global__ void swiglu_##S(TO* out, const TI* gu, long long M, int I, float alpha, \
                                        float limit) {                                         \
    grid_dep_launch(); /* the down projection after this streams its weights meanwhile */      \
    const long long n = M * I;                                                                 \
    if ((I & 7) == 0 && n <= 0x7fffffffLL) {                                                   \
      const unsigned I8 = (unsigned)I >> 3;                                                    \
      for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < (unsigned)(n >> 3);        \
           v += gridDim.x * blockDim.x) {                                                     \
        const unsigned m = v / I8, i = (v - m * I8) << 3;                                      \
        const TI* row = gu + (long long)m * 2 * I;                                             \
        float g[8], u[8];                                                                      \
        ld8f(row + i, g);                                                                      \
        ld8f(row + I + i, u);                                                                  \
        _Pragma("unroll") for (int j = 0; j < 8; j++) g[j] = swiglu_oai(g[j], u[j], alpha, limit); \
        st8f(out + (long long)m * I + i, g);                                                   \
      }                                                                                        \
      return;                                                                                  \
    }                                                                                          \
    if (n <= 0x7fffffffLL) {                                                                   \
      for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < (unsigned)n;           \
           idx += gridDim.x * blockDim.x) {                                                   \
        const unsigned m = idx / (unsigned)I;                                                  \
        swiglu_at(out, gu, m, (int)(idx - m * (unsigned)I), I, alpha, limit);                  \
      }                                                                                        \
      return;                                                                                  \
    }                                                                                          \
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < n;            \
         idx += (long long)gridDim.x * blockDim.x)                                             \
      swiglu_at(out, gu, idx / I, (int)(idx % I), I, alpha, limit);                            \
  }
FOR_2TYPES(SWIGLU)

// out[r, :] = x[rows[r], :]. grid (R), block 256.
#define GATHER(S, TO, TX)                                                                     \
  extern "C" __global__ void gather_rows_##S(TO* out, const TX* x, const int* rows, int D) {  \
    const int r = blockIdx.x;                                                                 \
    const long long src = rows[r];                                                            \
    for (int d = threadIdx.x; d < D; d += blockDim.x)                                         \
      stf(out + (long long)r * D + d, ldf(x + src * D + d));                                  \
  }
FOR_2TYPES(GATHER)

// out[m, :] = in[m, off : off + N] for in [M, Ntot], out [M, N], 16 bytes per thread (bf16:
// N, Ntot and off multiples of 8): one part of a GEMM over row-packed weights (matmulMany).
// grid-stride over M * N / 8, block 256.
extern "C" __global__ void split_columns_b(uint4* out, const bf16_t* in, long long M, int N,
                                           int Ntot, int off) {
  const long long per = N / 8;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < M * per;
       i += (long long)gridDim.x * blockDim.x) {
    const long long m = i / per;
    out[i] = reinterpret_cast<const uint4*>(in + m * Ntot + off)[i - m * per];
  }
}

// Element-wise dtype conversion, grid-stride.
#define CONVERT(S, TO, TI)                                                                    \
  extern "C" __global__ void convert_##S(TO* out, const TI* in, long long n) {               \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;               \
         i += (long long)gridDim.x * blockDim.x)                                              \
      stf(out + i, ldf(in + i));                                                              \
  }
FOR_2TYPES(CONVERT)

// Deterministic pseudo-random fill (for device-side random checkpoints and tests):
// out[i] = scale * (uniform(-1, 1) from a hash of (seed, i)) rounded to the output type.
__device__ __forceinline__ unsigned hash32(unsigned x) {
  x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
  return x;
}
#define FILL(S, TO)                                                                          \
  extern "C" __global__ void fill_random_##S(TO* out, long long n, unsigned seed, float scale, \
                                             float offset) {                                  \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;               \
         i += (long long)gridDim.x * blockDim.x) {                                            \
      unsigned h = hash32((unsigned)i ^ hash32(seed ^ (unsigned)(i >> 32) * 0x9e3779b9U));     \
      float u = (h >> 8) * (1.f / 8388608.f) - 1.f;                                           \
      stf(out + i, offset + scale * u);                                                       \
    }                                                                                         \
  }
FILL(b, bf16_t)
FILL(f, float)
