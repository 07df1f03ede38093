// Causal GQA attention over the paged KV cache, flash style (online softmax, f32), for prefill
// and decode alike, dense or MSA-sparse (each KV group attends only to its selected blocks).
//   q [T, H*Dh], caches [P*S, Hkv*Dh], out [T, H*Dh]; token t of sequence seqOfToken[t] at
//   position positions[t] attends keys 0..positions[t] of its sequence (page table row).
// Launch: grid (T, Hkv, splits), block 128 (4 warps; warp w owns heads w, w+4, ... of the group),
// dynamic smem (G*Dh + 2*32*(Dh+1)) floats. Keys go through shared memory 32 at a time;
// lane j scores key j, then each lane accumulates Dh/32 output dims.
// Templates: MH = max heads per warp (G <= 4*MH), MD = max dims per lane (Dh <= 32*MD),
// chosen per launch by the host through -D defines.
// Tested by test/gpu/gpu-check.ts against the CPU backend (dense, sparse, decode, prefill).
#include "common.cuh"

// 16 bytes of cache elements to floats in shared memory.
__device__ __forceinline__ void unpack16(float* dst, uint4 u) {
  dst[0] = __uint_as_float(u.x << 16); dst[1] = __uint_as_float(u.x & 0xffff0000u);
  dst[2] = __uint_as_float(u.y << 16); dst[3] = __uint_as_float(u.y & 0xffff0000u);
  dst[4] = __uint_as_float(u.z << 16); dst[5] = __uint_as_float(u.z & 0xffff0000u);
  dst[6] = __uint_as_float(u.w << 16); dst[7] = __uint_as_float(u.w & 0xffff0000u);
}
__device__ __forceinline__ void unpack16f(float* dst, uint4 u) {
  dst[0] = __uint_as_float(u.x); dst[1] = __uint_as_float(u.y);
  dst[2] = __uint_as_float(u.z); dst[3] = __uint_as_float(u.w);
}
template <typename TC> __device__ __forceinline__ void unpackc(float* dst, uint4 u);
template <> __device__ __forceinline__ void unpackc<bf16_t>(float* dst, uint4 u) { unpack16(dst, u); }
template <> __device__ __forceinline__ void unpackc<float>(float* dst, uint4 u) { unpack16f(dst, u); }

template <typename TA, typename TC, int MH, int MD>
__device__ void attn_impl(TA* out, const TA* q, const TC* kc, const TC* vc, const int* positions,
                          const int* seqOfToken, const int* pageTable, int pageStride, int T,
                          int H, int Hkv, int Dh, int S, float scale, const int* blocks, int topk,
                          float* part) {
  extern __shared__ float sm[];
  constexpr int VEC = 16 / sizeof(TC);
  const int splits = gridDim.z, z = blockIdx.z;
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
  // Split-KV (decode): split z takes selected blocks seg % splits == z (sparse), or an even
  // share of the 32-key chunks of 0..pos (dense); partial results are merged by attention_combine.
  const int nseg = blocks ? topk : 1;
  for (int seg = 0; seg < nseg; seg++) {
    int lo = 0, hi = pos + 1;
    if (blocks) {
      if (seg % splits != z) continue;
      const int b = blocks[((long long)g * T + t) * topk + seg];
      if (b < 0 || b * S > pos) continue;
      lo = b * S;
      hi = min(lo + S, pos + 1);
    } else if (splits > 1) {
      const int nc = (pos + 32) / 32;
      lo = (int)((long long)nc * z / splits) * 32;
      hi = min((int)((long long)nc * (z + 1) / splits) * 32, pos + 1);
    }
    for (int c = lo; c < hi; c += 32) {
      const int n = min(32, hi - c);
      __syncthreads();
      if (Dh % VEC == 0) {
        // 16-byte loads: one page-table lookup per key row, VEC elements per load.
        const int vpr = Dh / VEC;
        for (int i = tid; i < n * vpr; i += blockDim.x) {
          const int j = i / vpr, v = i - j * vpr, key = c + j;
          const long long off = ((long long)pt[key / S] * S + key % S) * W + g * Dh + v * VEC;
          unpackc<TC>(ks + j * P + v * VEC, *reinterpret_cast<const uint4*>(kc + off));
          unpackc<TC>(vs + j * P + v * VEC, *reinterpret_cast<const uint4*>(vc + off));
        }
      } else {
        for (int i = tid; i < n * Dh; i += blockDim.x) {
          const int j = i / Dh, d = i - j * Dh, key = c + j;
          const long long slot = (long long)pt[key / S] * S + key % S;
          ks[j * P + d] = ldf(kc + slot * W + g * Dh + d);
          vs[j * P + d] = ldf(vc + slot * W + g * Dh + d);
        }
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
  if (splits > 1) {
#pragma unroll
    for (int hh = 0; hh < MH; hh++) {
      const int h = warp + hh * 4;
      if (h >= G) continue;
      // part: [T*H, splits] x (Dh acc, then m, l)
      float* pp = part + (((long long)t * H + g * G + h) * splits + z) * (Dh + 2);
#pragma unroll
      for (int d = 0; d < MD; d++) {
        const int dd = lane + 32 * d;
        if (dd < Dh) pp[dd] = acc[hh][d];
      }
      if (lane == 0) { pp[Dh] = m[hh]; pp[Dh + 1] = l[hh]; }
    }
    return;
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
    int S, float scale, const int* blocks, int topk, float* part) {
  attn_impl<ATTN_T, ATTN_T, ATTN_MH, ATTN_MD>(out, q, kc, vc, positions, seqOfToken, pageTable,
                                              pageStride, T, H, Hkv, Dh, S, scale, blocks, topk,
                                              part);
}

// Merges split-KV partials: grid (T, H), block 128. out[t, h] = sum_z acc_z e^(m_z - M) / L.
// The splits' weights e^(m_z - M) are made once per block, 128 splits at a time, in shared
// memory, and M by a block reduction: every thread used to make all of them twice, after a
// serial max (~19 us a layer at 96 splits, session 16's per-node profile). L and each output
// still add the splits in order z = 0, 1, ..., so the result is the same bits.
extern "C" __global__ void attention_combine(ATTN_T* out, const float* part, int H, int Dh,
                                             int splits) {
  grid_dep_launch();  // the output projection after this streams its weights meanwhile
  constexpr int CH = 128;
  __shared__ float ez[CH];
  __shared__ bool live[CH];
  __shared__ float red[32];
  const int tid = threadIdx.x, nw = blockDim.x >> 5;
  const long long th = (long long)blockIdx.x * H + blockIdx.y;
  const float* pp = part + th * splits * (Dh + 2);
  float M = -INFINITY;
  for (int z = tid; z < splits; z += blockDim.x) M = fmaxf(M, pp[z * (Dh + 2) + Dh]);
  M = warp_max(M);
  if ((tid & 31) == 0) red[tid >> 5] = M;
  __syncthreads();
  M = red[0];
  for (int w = 1; w < nw; w++) M = fmaxf(M, red[w]);
  for (int d0 = 0; d0 < Dh; d0 += blockDim.x) {
    const int d = d0 + tid;
    float s = 0.f, L = 0.f;
    for (int c = 0; c < splits; c += CH) {
      const int n = min(CH, splits - c);
      __syncthreads();  // the previous chunk's weights are used up
      for (int i = tid; i < n; i += blockDim.x) {
        const float mz = pp[(c + i) * (Dh + 2) + Dh];
        live[i] = mz != -INFINITY;
        ez[i] = live[i] ? expf(mz - M) : 0.f;
      }
      __syncthreads();
      for (int i = 0; i < n; i++) {
        if (!live[i]) continue;
        const float* pz = pp + (c + i) * (Dh + 2);
        L += pz[Dh + 1] * ez[i];
        if (d < Dh) s += pz[d] * ez[i];
      }
    }
    const float inv = L > 0.f ? 1.f / L : 0.f;
    if (d < Dh) stf(out + th * Dh + d, s * inv);
  }
}
