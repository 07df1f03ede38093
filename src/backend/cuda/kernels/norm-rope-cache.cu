// Attention's input steps of one layer in one kernel, bit for bit the unfused sequence
//   rmsnorm(q, qw); rmsnorm(k, kw)   (per head, norm.cu's rmsnorm_warp arithmetic)
//   rope(q); rope(k)                 (elementwise.cu's rope_*, rope.cuh)
//   write_cache(kc, k, kScale); write_cache(vc, v, vScale)   (elementwise.cu's write_cache_*)
// q [T, Hq*Dh] and k [T, Hk*Dh] are updated in place (normed and rotated); kc/vc [P*S, Hk*Dh]
// get row slots[t]. v and vc may be null (the MSA index branch: one key cache, no values).
// Each value passes through the same roundings as the unfused kernels: the norm's output is
// rounded to TX before RoPE reads it, RoPE's to TX before the cache write reads it; an E4M3
// cache stores E4M3(x / scale) with IEEE division (write_cache_8*).
// Launch: grid (T), block 256 (8 warps, one head row at a time per warp), dyn smem
//   (R + 8 * Dh) * 4 bytes. Dh <= 1024. Type letters: x (q/k/v), w (norm weights), cache
//   (b, f, 8 = E4M3).
// Tested by test/gpu/norm-rope-cache-check.ts: fused against the unfused kernels, every bit.
// W3 of 2026-12-02 found 4 of 97M bf16 values (0.2% of f32 values) one ulp off: the compiler
// had contracted rope_lo/rope_hi into different FMAs here and in rope_*. rope.cuh and the norm
// sums now spell every rounding (__fmul_rn/__fsub_rn/__fadd_rn/__fmaf_rn), so neither kernel
// has a choice; session 6 W2 found every value equal, so the backend always takes it.
#include "common.cuh"
#include "fp8.cuh"
#include "rope.cuh"

template <typename TC> __device__ __forceinline__ void put(TC* p, float v, float scale);
template <> __device__ __forceinline__ void put<bf16_t>(bf16_t* p, float v, float) { *p = f2bf(v); }
template <> __device__ __forceinline__ void put<float>(float* p, float v, float) { *p = v; }
template <> __device__ __forceinline__ void put<e4m3_t>(e4m3_t* p, float v, float scale) {
  *p = f32_to_e4m3(__fdiv_rn(v, scale));
}

template <typename TX, typename TW, typename TC>
__device__ void norm_rope_cache_impl(TX* q, TX* k, const TX* v, const TW* qw, const TW* kw,
                                     TC* kc, TC* vc, const int* pos, const int* slots, int Hq,
                                     int Hk, int Dh, int R, double theta, float eps, float kScale,
                                     float vScale) {
  extern __shared__ float smf[];
  float* cs = smf;       // [R/2][2]: cos, sin of pair i
  float* rows = smf + R;  // [8][Dh]: each warp's normed row
  const int t = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int half = R / 2;
  for (int i = tid; i < half; i += blockDim.x) rope_angle(pos[t], i, R, theta, cs + 2 * i, cs + 2 * i + 1);
  __syncthreads();
  const long long slot = slots[t];
  float* buf = rows + warp * Dh;
  for (int hh = warp; hh < Hq + Hk; hh += blockDim.x >> 5) {
    const bool isK = hh >= Hq;
    const int h = isK ? hh - Hq : hh;
    TX* x = isK ? k + ((long long)t * Hk + h) * Dh : q + ((long long)t * Hq + h) * Dh;
    const TW* w = isK ? kw : qw;
    float ss = 0.f;
    for (int i = lane; i < Dh; i += 32) {
      const float a = ldf(x + i);
      ss = __fmaf_rn(a, a, ss);  // as norm.cu's rms_warp
    }
    const float inv = rsqrtf(warp_sum(ss) / Dh + eps);
    for (int i = lane; i < Dh; i += 32) buf[i] = roundto<TX>(ldf(x + i) * inv * (1.f + ldf(w + i)));
    __syncwarp();
    for (int i = lane; i < Dh; i += 32) {
      float y = buf[i];
      if (i < half) y = roundto<TX>(rope_lo(buf[i], buf[i + half], cs[2 * i], cs[2 * i + 1]));
      else if (i < R) {
        const int j = i - half;
        y = roundto<TX>(rope_hi(buf[j], buf[i], cs[2 * j], cs[2 * j + 1]));
      }
      stf(x + i, y);
      if (isK) put(kc + slot * Hk * Dh + (long long)h * Dh + i, y, kScale);
    }
    __syncwarp();  // buf is rewritten by this warp's next head
  }
  if (v)
    for (int d = tid; d < Hk * Dh; d += blockDim.x)
      put(vc + slot * Hk * Dh + d, ldf(v + (long long)t * Hk * Dh + d), vScale);
}

#define NORM_ROPE_CACHE(S, TX, TW, TC)                                                          \
  extern "C" __global__ void norm_rope_cache_##S(                                               \
      TX* q, TX* k, const TX* v, const TW* qw, const TW* kw, TC* kc, TC* vc, const int* pos,    \
      const int* slots, int Hq, int Hk, int Dh, int R, double theta, float eps, float kScale,   \
      float vScale) {                                                                           \
    norm_rope_cache_impl(q, k, v, qw, kw, kc, vc, pos, slots, Hq, Hk, Dh, R, theta, eps, kScale, \
                         vScale);                                                               \
  }
NORM_ROPE_CACHE(bbb, bf16_t, bf16_t, bf16_t)
NORM_ROPE_CACHE(bb8, bf16_t, bf16_t, e4m3_t)
NORM_ROPE_CACHE(bfb, bf16_t, float, bf16_t)
NORM_ROPE_CACHE(bf8, bf16_t, float, e4m3_t)
NORM_ROPE_CACHE(fff, float, float, float)
NORM_ROPE_CACHE(fbf, float, bf16_t, float)
