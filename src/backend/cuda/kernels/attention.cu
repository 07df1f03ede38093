// Causal GQA attention over the paged KV cache, flash style (online softmax, f32), for prefill
// and decode alike, dense or MSA-sparse (each KV group attends only to its selected blocks).
//   q [T, H*Dh], caches [P*S, Hkv*Dh], out [T, H*Dh]; token t of sequence seqOfToken[t] at
//   position positions[t] attends keys 0..positions[t] of its sequence (page table row).
// Launch: grid (T, Hkv), block 128 (4 warps; warp w owns heads w, w+4, ... of the group),
// dynamic smem (G*Dh + 2*32*(Dh+1)) floats. Keys go through shared memory 32 at a time;
// lane j scores key j, then each lane accumulates Dh/32 output dims.
// Templates: MH = max heads per warp (G <= 4*MH), MD = max dims per lane (Dh <= 32*MD),
// chosen per launch by the host through -D defines.
// Tested by test/gpu/gpu-check.ts against the CPU backend (dense, sparse, decode, prefill).
#include "common.cuh"

template <typename TA, typename TC, int MH, int MD>
__device__ void attn_impl(TA* out, const TA* q, const TC* kc, const TC* vc, const int* positions,
                          const int* seqOfToken, const int* pageTable, int pageStride, int T,
                          int H, int Hkv, int Dh, int S, float scale, const int* blocks, int topk) {
  extern __shared__ float sm[];
  const int G = H / Hkv, W = Hkv * Dh, P = Dh + 1;
  float* qs = sm;
  float* ks = qs + G * Dh;
  float* vs = ks + 32 * P;
  const int t = blockIdx.x, g = blockIdx.y;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int pos = positions[t];
  const int* pt = pageTable + (long long)seqOfToken[t] * pageStride;
  for (int i = tid; i < G * Dh; i += blockDim.x)
    qs[i] = ldf(q + (long long)t * H * Dh + (long long)g * G * Dh + i);

  float m[MH], l[MH], acc[MH][MD];
#pragma unroll
  for (int h = 0; h < MH; h++) {
    m[h] = -INFINITY;
    l[h] = 0.f;
#pragma unroll
    for (int d = 0; d < MD; d++) acc[h][d] = 0.f;
  }
  const int nseg = blocks ? topk : 1;
  for (int seg = 0; seg < nseg; seg++) {
    int lo = 0, hi = pos + 1;
    if (blocks) {
      const int b = blocks[((long long)g * T + t) * topk + seg];
      if (b < 0 || b * S > pos) continue;
      lo = b * S;
      hi = min(lo + S, pos + 1);
    }
    for (int c = lo; c < hi; c += 32) {
      const int n = min(32, hi - c);
      __syncthreads();
      for (int i = tid; i < n * Dh; i += blockDim.x) {
        const int j = i / Dh, d = i - j * Dh, key = c + j;
        const long long slot = (long long)pt[key / S] * S + key % S;
        ks[j * P + d] = ldf(kc + slot * W + g * Dh + d);
        vs[j * P + d] = ldf(vc + slot * W + g * Dh + d);
      }
      __syncthreads();
#pragma unroll
      for (int hh = 0; hh < MH; hh++) {
        const int h = warp + hh * 4;
        if (h >= G) continue;
        float sc = -INFINITY;
        if (lane < n) {
          float dot = 0.f;
          const float* qh = qs + h * Dh;
          const float* kr = ks + lane * P;
          for (int d = 0; d < Dh; d++) dot += qh[d] * kr[d];
          sc = dot * scale;
        }
        const float mnew = fmaxf(m[hh], warp_max(sc));
        const float p = lane < n ? expf(sc - mnew) : 0.f;
        const float corr = m[hh] == -INFINITY ? 0.f : expf(m[hh] - mnew);
        l[hh] = l[hh] * corr + warp_sum(p);
        m[hh] = mnew;
#pragma unroll
        for (int d = 0; d < MD; d++) acc[hh][d] *= corr;
        for (int j = 0; j < n; j++) {
          const float pj = __shfl_sync(0xffffffffu, p, j);
          const float* vr = vs + j * P;
#pragma unroll
          for (int d = 0; d < MD; d++) {
            const int dd = lane + 32 * d;
            if (dd < Dh) acc[hh][d] += pj * vr[dd];
          }
        }
      }
    }
  }
#pragma unroll
  for (int hh = 0; hh < MH; hh++) {
    const int h = warp + hh * 4;
    if (h >= G) continue;
    const float inv = l[hh] > 0.f ? 1.f / l[hh] : 0.f;
    TA* o = out + (long long)t * H * Dh + (long long)(g * G + h) * Dh;
#pragma unroll
    for (int d = 0; d < MD; d++) {
      const int dd = lane + 32 * d;
      if (dd < Dh) stf(o + dd, acc[hh][d] * inv);
    }
  }
}

// One instance per compile: the host passes -DATTN_T=<bf16_t|float> -DATTN_MH=.. -DATTN_MD=..
// (kernel-cache.ts compiles and caches each variant separately).
#ifndef ATTN_T
#define ATTN_T bf16_t
#define ATTN_MH 4
#define ATTN_MD 4
#endif
extern "C" __global__ void __launch_bounds__(128) attention(
    ATTN_T* out, const ATTN_T* q, const ATTN_T* kc, const ATTN_T* vc, const int* positions,
    const int* seqOfToken, const int* pageTable, int pageStride, int T, int H, int Hkv, int Dh,
    int S, float scale, const int* blocks, int topk) {
  attn_impl<ATTN_T, ATTN_T, ATTN_MH, ATTN_MD>(out, q, kc, vc, positions, seqOfToken, pageTable,
                                              pageStride, T, H, Hkv, Dh, S, scale, blocks, topk);
}
