// MoE router: s = sigmoid(logits) in f32; top-K ids by s + bias (descending, ties to the
// lower id); weights = s[sel] / sum(s[sel]) * scale. With sharedId >= 0, column K is that id
// with weight exactly 1.0 (width K+1): the gate is asked for the K routed experts only, and
// the shared slot is appended once (seed 002).
// Launch: grid (ceil(T/8)), block 256 (one warp per token), dynamic smem 8 * 2 * E floats.
// Tested by test/gpu/gpu-check.ts (against the CPU backend; capture rows: K distinct routed
// ids < E and exactly one shared id).
#include "common.cuh"

template <typename TL>
__device__ void router_impl(int* ids, float* weights, const TL* logits, const float* bias, int T,
                            int E, int K, float scale, int sharedId) {
  extern __shared__ float sm[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int t = blockIdx.x * 8 + warp;
  if (t >= T) return;
  float* s = sm + warp * 2 * E;
  float* sel = s + E;
  for (int e = lane; e < E; e += 32) {
    const float v = 1.f / (1.f + expf(-ldf(logits + (long long)t * E + e)));
    s[e] = v;
    sel[e] = v + (bias ? bias[e] : 0.f);
  }
  __syncwarp();
  const int width = K + (sharedId >= 0 ? 1 : 0);
  float sum = 0.f;
  for (int k = 0; k < K; k++) {
    float best = -INFINITY;
    int bi = 0x7fffffff;
    for (int e = lane; e < E; e += 32)
      if (sel[e] > best) { best = sel[e]; bi = e; }
    for (int o = 16; o > 0; o >>= 1) {
      const float ob = __shfl_xor_sync(0xffffffffu, best, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (ob > best || (ob == best && oi < bi)) { best = ob; bi = oi; }
    }
    if (lane == 0) {
      ids[(long long)t * width + k] = bi;
      weights[(long long)t * width + k] = s[bi];
      sel[bi] = -INFINITY;
    }
    sum += s[bi];
    __syncwarp();
  }
  if (lane == 0) {
    for (int k = 0; k < K; k++) weights[(long long)t * width + k] = weights[(long long)t * width + k] / sum * scale;
    if (sharedId >= 0) {
      ids[(long long)t * width + K] = sharedId;
      weights[(long long)t * width + K] = 1.f;
    }
  }
}

extern "C" __global__ void router_topk_f(int* ids, float* weights, const float* logits,
                                         const float* bias, int T, int E, int K, float scale,
                                         int sharedId) {
  router_impl(ids, weights, logits, bias, T, E, K, scale, sharedId);
}
extern "C" __global__ void router_topk_b(int* ids, float* weights, const bf16_t* logits,
                                         const float* bias, int T, int E, int K, float scale,
                                         int sharedId) {
  router_impl(ids, weights, logits, bias, T, E, K, scale, sharedId);
}
