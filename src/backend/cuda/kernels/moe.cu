// Mixture-of-experts: token permutation by expert, grouped expert GEMMs, weighted combine.
// Pipeline (all device-side, CUDA-graph capturable; no host reads):
//   moe_count   grid-stride over T*Kw slots        counts[e] (pre-zeroed) += 1
//   moe_scan    1 block                            offsets, tile table (expert, first row)
//   moe_scan_warp 1 warp                           the same table by warp scans (the default)
//   moe_scatter grid-stride                        perm[row] = slot, slotRow[slot] = row | -1
//   moe_plan_block 1 block of 256, dyn smem 8*E    all three above for n <= PLAN_BLOCK_MAX_SLOTS
//                                                  (decode): one launch instead of three + a memset
//   moe_mma_gu_<BT>   grid (ceil(I/64), maxTiles), block 128, dyn smem: fused gate|up GEMM
//                     + SwiGLU-OAI -> act [rows, I] bf16 (tensor cores, mma.sync m16n8k16)
//   moe_mma_down_<BT> grid (ceil(D/64), maxTiles), block 128: y[row] = w * act[row] . down^T (f32)
//   moe_combine_<o>   grid (T, ceil(D/1024)), block 256: out[t] = sum_j y[slotRow[t, j]] in slot
//                     order, 4 columns a thread
// Scalar fallbacks (any dtype, any K) moe_gu_scalar_* / moe_down_scalar_*: grid (ceil(N/8),
// maxRows), block 256, one warp per output element.
// Tested by test/gpu/gpu-check.ts (op comparisons against the CPU backend, real-size model).
#include "common.cuh"
#include "mma.cuh"

extern "C" __global__ void moe_count(int* counts, const int* ids, int n, int first, int E) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int e = ids[i] - first;
    if (e >= 0 && e < E) atomicAdd(counts + e, 1);
  }
}

// offsets [E+1], cursor [E], tileExpert/tileStart [maxTiles], numTiles [1].
extern "C" __global__ void moe_scan(int* offsets, int* cursor, int* tileExpert, int* tileStart,
                                    int* numTiles, const int* counts, int E, int BT, int maxTiles) {
  if (threadIdx.x != 0) return;
  int off = 0, nt = 0;
  for (int e = 0; e < E; e++) {
    offsets[e] = off;
    cursor[e] = 0;
    const int c = counts[e];
    for (int s = 0; s < c; s += BT) {
      if (nt < maxTiles) { tileExpert[nt] = e; tileStart[nt] = off + s; }
      nt++;
    }
    off += c;
  }
  offsets[E] = off;
  *numTiles = nt < maxTiles ? nt : maxTiles;
}

// The same table from one warp, 32 experts per step: each lane loads its expert's count, a
// warp scan gives the rows and tiles before it (plus the carry of earlier steps), and each lane
// writes its own tiles (the serial loop above makes one dependent L2 load per expert: tens of
// microseconds per MoE layer at 129 experts). Called by lanes 0-31 of one warp; each expert's
// cursor starts at 0 (moe_scatter adds offsets) or, AT_OFFSET, at its first row.
template <bool AT_OFFSET>
__device__ __forceinline__ void warp_tile_table(int* offsets, int* cursor, int* tileExpert,
                                                int* tileStart, int* numTiles, const int* counts,
                                                int E, int BT, int maxTiles) {
  const int lane = threadIdx.x;
  int off = 0, nt = 0;  // rows and tiles of the experts before this step
  for (int e0 = 0; e0 < E; e0 += 32) {
    const int e = e0 + lane;
    const int c = e < E ? counts[e] : 0;
    const int t = (c + BT - 1) / BT;
    int rc = c, rt = t;  // inclusive scans
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int a = __shfl_up_sync(0xffffffffu, rc, d), b = __shfl_up_sync(0xffffffffu, rt, d);
      if (lane >= d) {
        rc += a;
        rt += b;
      }
    }
    const int o = off + rc - c, n0 = nt + rt - t;
    if (e < E) {
      offsets[e] = o;
      cursor[e] = AT_OFFSET ? o : 0;
      for (int s = 0; s < t && n0 + s < maxTiles; s++) {
        tileExpert[n0 + s] = e;
        tileStart[n0 + s] = o + s * BT;
      }
    }
    off += __shfl_sync(0xffffffffu, rc, 31);
    nt += __shfl_sync(0xffffffffu, rt, 31);
  }
  if (lane == 0) {
    offsets[E] = off;
    *numTiles = nt < maxTiles ? nt : maxTiles;
  }
}

// The tile table by warp scans, between moe_count and moe_scatter (past moe_plan_block's slots;
// setMoeScan picks).
extern "C" __global__ void moe_scan_warp(int* offsets, int* cursor, int* tileExpert,
                                         int* tileStart, int* numTiles, const int* counts, int E,
                                         int BT, int maxTiles) {
  if (threadIdx.x >= 32) return;
  warp_tile_table<false>(offsets, cursor, tileExpert, tileStart, numTiles, counts, E, BT, maxTiles);
}

extern "C" __global__ void moe_scatter(int* perm, int* slotRow, int* cursor, const int* offsets,
                                       const int* ids, int n, int first, int E) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int e = ids[i] - first;
    if (e >= 0 && e < E) {
      const int r = offsets[e] + atomicAdd(cursor + e, 1);
      perm[r] = i;
      slotRow[i] = r;
    } else {
      slotRow[i] = -1;
    }
  }
}

// Count, tile table and scatter in one block, the counts and cursors in shared memory: at
// decode (a few hundred slots) the three kernels above and the memset of counts are four graph
// nodes of a few microseconds each, serial on the MoE's critical path. The outputs are theirs:
// the same offsets, tile table and numTiles, and perm/slotRow grouped by expert; the order of
// the slots within an expert follows the shared-memory atomics, as the grid-stride scatter's
// follows the global ones, and no expert kernel's per-row result depends on it.
extern "C" __global__ void moe_plan_block(int* offsets, int* tileExpert, int* tileStart,
                                          int* numTiles, int* perm, int* slotRow, const int* ids,
                                          int n, int first, int E, int BT, int maxTiles) {
  extern __shared__ int plan_smem[];
  int* cnt = plan_smem;      // [E] slots per expert
  int* cur = plan_smem + E;  // [E] next row of each expert
  for (int e = threadIdx.x; e < E; e += blockDim.x) cnt[e] = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int e = ids[i] - first;
    if (e >= 0 && e < E) atomicAdd(cnt + e, 1);
  }
  __syncthreads();
  if (threadIdx.x < 32)
    warp_tile_table<true>(offsets, cur, tileExpert, tileStart, numTiles, cnt, E, BT, maxTiles);
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int e = ids[i] - first;
    if (e >= 0 && e < E) {
      const int r = atomicAdd(cur + e, 1);
      perm[r] = i;
      slotRow[i] = r;
    } else {
      slotRow[i] = -1;
    }
  }
}

// ---------------------------------------------------------------- tensor-core path (bf16)
#define BK 64
#define PITCH (BK + 8)
#define STAGES 4

// One block: 64 weight rows (x2 matrices when GU: gate rows i and up rows I+i) x BT token rows.
// W [E, rowsPerExpert, K] bf16; B rows come from x[perm[r]/Kw] (GU) or act[r] (DOWN).
enum MmaMode { GU = 0, DOWN = 1 };
template <int BT, int MODE>
__device__ void moe_mma(const bf16_t* __restrict__ W, const bf16_t* __restrict__ Bsrc,
                        const int* perm, int Kw, const int* offsets, const int* tileExpert,
                        const int* tileStart, const int* numTiles, int K, int Nvalid,
                        int rowsPerExpert, int upOffset, void* outp, const float* rw,
                        float alpha, float limit) {
  constexpr bool GU = MODE == 0;
  constexpr int NA = GU ? 2 : 1;
  constexpr int NF = BT / 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16_t* smem = reinterpret_cast<bf16_t*>(smem_raw);
  const int stageElems = (NA * 64 + BT) * PITCH;
  const int tile = blockIdx.y;
  if (tile >= *numTiles) return;
  const int e = tileExpert[tile], r0 = tileStart[tile];
  const int rEnd = min(r0 + BT, offsets[e + 1]);
  const int n0 = blockIdx.x * 64;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  // Per-thread source rows (fixed over the K loop).
  const bf16_t* aSrc[NA][4];
  bool aOk[4];
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const int c = tid + 128 * j, r = c >> 3, kc = (c & 7) * 8;
    aOk[j] = n0 + r < Nvalid;
    const long long row = (long long)e * rowsPerExpert + (aOk[j] ? n0 + r : 0);
#pragma unroll
    for (int m = 0; m < NA; m++) aSrc[m][j] = W + (row + m * upOffset) * K + kc;
  }
  constexpr int BCH = (BT * 8 + 127) / 128;
  const bf16_t* bSrc[BCH];
  bool bOk[BCH];
#pragma unroll
  for (int j = 0; j < BCH; j++) {
    const int c = tid + 128 * j, r = c >> 3, kc = (c & 7) * 8;
    const int row = r0 + r;
    bOk[j] = c < BT * 8 && row < rEnd;
    long long src = 0;
    if (bOk[j]) src = GU ? (long long)(perm[row] / Kw) * K : (long long)row * K;
    bSrc[j] = Bsrc + src + kc;
  }

  auto load = [&](int stage, int kt) {
    bf16_t* s = smem + stage * stageElems;
    const int koff = kt * BK;
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int c = tid + 128 * j, r = c >> 3, kc = (c & 7) * 8;
#pragma unroll
      for (int m = 0; m < NA; m++)
        cp_async16(s + (m * 64 + r) * PITCH + kc, aSrc[m][j] + koff, aOk[j]);
    }
#pragma unroll
    for (int j = 0; j < BCH; j++) {
      const int c = tid + 128 * j, r = c >> 3, kc = (c & 7) * 8;
      if (c < BT * 8) cp_async16(s + (NA * 64 + r) * PITCH + kc, bSrc[j] + koff, bOk[j]);
    }
  };

  float acc[NA][NF][4];
#pragma unroll
  for (int m = 0; m < NA; m++)
#pragma unroll
    for (int f = 0; f < NF; f++)
#pragma unroll
      for (int q = 0; q < 4; q++) acc[m][f][q] = 0.f;

  const int KT = K / BK;
#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < KT) load(s, s);
    cp_commit();
  }
  for (int kt = 0; kt < KT; kt++) {
    cp_wait<STAGES - 2>();
    __syncthreads();
    const int nxt = kt + STAGES - 1;
    if (nxt < KT) load(nxt % STAGES, nxt);
    cp_commit();
    const bf16_t* s = smem + (kt % STAGES) * stageElems;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned a[NA][4];
#pragma unroll
      for (int m = 0; m < NA; m++)
        ldsm_x4(a[m][0], a[m][1], a[m][2], a[m][3],
                s + (m * 64 + warp * 16 + (lane & 15)) * PITCH + kk + (lane >> 4) * 8);
#pragma unroll
      for (int f = 0; f < NF; f += 2) {
        unsigned b0, b1, b2, b3;
        ldsm_x4(b0, b1, b2, b3,
                s + (NA * 64 + f * 8 + (lane & 7) + (lane >> 4) * 8) * PITCH + kk +
                    ((lane >> 3) & 1) * 8);
#pragma unroll
        for (int m = 0; m < NA; m++) {
          mma16816(acc[m][f], a[m], b0, b1);
          mma16816(acc[m][f + 1], a[m], b2, b3);
        }
      }
    }
  }
  cp_wait<0>();

  // Epilogue: C fragment rows = weight rows (n), columns = token rows.
#pragma unroll
  for (int f = 0; f < NF; f++) {
#pragma unroll
    for (int q = 0; q < 4; q++) {
      const int n = n0 + warp * 16 + (lane >> 2) + (q >> 1) * 8;
      const int row = r0 + f * 8 + (lane & 3) * 2 + (q & 1);
      if (n >= Nvalid || row >= rEnd) continue;
      if (GU) {
        const float v = swiglu_oai(acc[0][f][q], acc[NA - 1][f][q], alpha, limit);
        reinterpret_cast<bf16_t*>(outp)[(long long)row * Nvalid + n] = f2bf(v);
      } else {
        reinterpret_cast<float*>(outp)[(long long)row * Nvalid + n] = acc[0][f][q] * rw[perm[row]];
      }
    }
  }
}

#define MOE_MMA(BT)                                                                           \
  extern "C" __global__ void __launch_bounds__(128) moe_mma_gu_##BT(                          \
      const bf16_t* W, const bf16_t* x, const int* perm, int Kw, const int* offsets,          \
      const int* tileExpert, const int* tileStart, const int* numTiles, int D, int I,         \
      bf16_t* act, float alpha, float limit) {                                                \
    moe_mma<BT, GU>(W, x, perm, Kw, offsets, tileExpert, tileStart, numTiles, D, I, 2 * I,  \
                      I, act, nullptr, alpha, limit);                                         \
  }                                                                                           \
  extern "C" __global__ void __launch_bounds__(128) moe_mma_down_##BT(                        \
      const bf16_t* W, const bf16_t* act, const int* perm, int Kw, const int* offsets,        \
      const int* tileExpert, const int* tileStart, const int* numTiles, int I, int D, float* y, \
      const float* rw) {                                                                      \
    moe_mma<BT, DOWN>(W, act, perm, Kw, offsets, tileExpert, tileStart, numTiles, I, D, D, 0, \
                       y, rw, 0.f, 0.f);                                                      \
  }
MOE_MMA(16)
MOE_MMA(32)
MOE_MMA(64)

// ---------------------------------------------------------------- scalar fallback (any dtype)
__device__ __forceinline__ int expert_of_row(const int* offsets, int E, int r) {
  int lo = 0, hi = E - 1;  // last e with offsets[e] <= r
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (offsets[mid] <= r) lo = mid; else hi = mid - 1;
  }
  return lo;
}

template <typename TW, typename TX>
__device__ void gu_scalar(const TW* W, const TX* x, const int* perm, int Kw, const int* offsets,
                          int E, int D, int I, float* act, float alpha, float limit) {
  const int r = blockIdx.y, lane = threadIdx.x & 31;
  const int i = blockIdx.x * 8 + (threadIdx.x >> 5);
  if (r >= offsets[E] || i >= I) return;
  const int e = expert_of_row(offsets, E, r);
  const TX* xr = x + (long long)(perm[r] / Kw) * D;
  const TW* g = W + ((long long)e * 2 * I + i) * D;
  const TW* u = g + (long long)I * D;
  float sg = 0.f, su = 0.f;
  for (int k = lane; k < D; k += 32) { const float xv = ldf(xr + k); sg += xv * ldf(g + k); su += xv * ldf(u + k); }
  sg = warp_sum(sg);
  su = warp_sum(su);
  if (lane == 0) act[(long long)r * I + i] = swiglu_oai(sg, su, alpha, limit);
}

template <typename TW>
__device__ void down_scalar(const TW* W, const float* act, const int* perm, const int* offsets,
                            int E, int I, int D, float* y, const float* rw) {
  const int r = blockIdx.y, lane = threadIdx.x & 31;
  const int n = blockIdx.x * 8 + (threadIdx.x >> 5);
  if (r >= offsets[E] || n >= D) return;
  const int e = expert_of_row(offsets, E, r);
  const float* ar = act + (long long)r * I;
  const TW* w = W + ((long long)e * D + n) * I;
  float s = 0.f;
  for (int k = lane; k < I; k += 32) s += ar[k] * ldf(w + k);
  s = warp_sum(s);
  if (lane == 0) y[(long long)r * D + n] = s * rw[perm[r]];
}

#define MOE_SCALAR(S, TW, TX)                                                                 \
  extern "C" __global__ void moe_gu_scalar_##S(const TW* W, const TX* x, const int* perm,     \
                                               int Kw, const int* offsets, int E, int D, int I, \
                                               float* act, float alpha, float limit) {        \
    gu_scalar(W, x, perm, Kw, offsets, E, D, I, act, alpha, limit);                           \
  }
FOR_2TYPES(MOE_SCALAR)
extern "C" __global__ void moe_down_scalar_b(const bf16_t* W, const float* act, const int* perm,
                                             const int* offsets, int E, int I, int D, float* y,
                                             const float* rw) {
  down_scalar(W, act, perm, offsets, E, I, D, y, rw);
}
extern "C" __global__ void moe_down_scalar_f(const float* W, const float* act, const int* perm,
                                             const int* offsets, int E, int I, int D, float* y,
                                             const float* rw) {
  down_scalar(W, act, perm, offsets, E, I, D, y, rw);
}

// out[t, :] = sum over slots j (in order) of y[slotRow[t*Kw+j], :]; absent slots add nothing.
// A thread sums 4 adjacent columns over the slots, the slots' loads independent of each other
// so that they are in flight together (16 bytes each when D % 4 == 0). One block per token
// looping over D made each thread wait for 24 rounds of loads at D = 6,144: ~29 us at T = 1
// (ncu per-node profile, session 16), for 150 KB.
template <typename TO>
__device__ void combine(TO* out, const float* y, const int* slotRow, int Kw, int D) {
  const int t = blockIdx.x, d0 = 4 * (blockIdx.y * blockDim.x + threadIdx.x);
  if (d0 >= D) return;
  const int* sr = slotRow + (long long)t * Kw;
  float s[4] = {0.f, 0.f, 0.f, 0.f};
  if (D % 4 == 0) {
#pragma unroll 8
    for (int j = 0; j < Kw; j++) {
      const int r = sr[j];
      if (r < 0) continue;
      const float4 v = *reinterpret_cast<const float4*>(y + (long long)r * D + d0);
      s[0] += v.x;
      s[1] += v.y;
      s[2] += v.z;
      s[3] += v.w;
    }
  } else {
    for (int j = 0; j < Kw; j++) {
      const int r = sr[j];
      if (r < 0) continue;
      for (int k = 0; k < 4 && d0 + k < D; k++) s[k] += y[(long long)r * D + d0 + k];
    }
  }
  for (int k = 0; k < 4 && d0 + k < D; k++) stf(out + (long long)t * D + d0 + k, s[k]);
}
extern "C" __global__ void moe_combine_b(bf16_t* out, const float* y, const int* slotRow, int Kw, int D) {
  combine(out, y, slotRow, Kw, D);
}
extern "C" __global__ void moe_combine_f(float* out, const float* y, const int* slotRow, int Kw, int D) {
  combine(out, y, slotRow, Kw, D);
}
