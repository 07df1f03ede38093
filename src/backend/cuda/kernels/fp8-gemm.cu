// FP8 weight GEMMs, W8A16: E4M3 weight codes with per-row group scales, bf16 activations,
// bf16 tensor-core MMA (m16n8k16), fp32 accumulation. Weights stay FP8 in memory (half the
// bytes of bf16, which is what memory-bound decode reads); each K tile of codes is widened to
// bf16 in shared memory (every E4M3 value is exact in bf16) and fed to the same MMA loop as
// moe.cu. Scales (tensor/fp8-weight.ts), one per weight row and group of G inputs, layout
// [rows, ceil(K/G)]:
//   BLK (block FP8, G % 128 == 0): f32 scale_inv, applied to each 128-input tile's fp32
//       partial sums: out = sum_tiles s[row, tile] * (x_tile . codes_tile), which is exactly
//       x . (codes * s) (the CPU's dequantize-at-load), up to accumulation order.
//   MX (MXFP8, G % 16 == 0): UE8M0 exponent, folded into the widened weight (codes * 2^(s-127)
//       is exact in bf16 barring under/overflow), so again exactly the CPU's dequantized values.
// Kernels (BT = token rows per tile, 16/32/64; F = blk | mx):
//   fp8_gu_<F>_<BT>    grid (ceil(I/64), maxTiles), block 128: moe_mma_gu with FP8 experts
//   fp8_down_<F>_<BT>  grid (ceil(D/64), maxTiles), block 128: moe_mma_down with FP8 experts
//   fp8_gemm_<o>_<F>_<BT> grid (ceil(N/64), ceil(M/BT)), block 128: dense out[M, N] = x . W^T
//   dynamic smem for all three: F8_STAGES*(NA*64*128 + BT*F8_PITCH*2) + NA*64*F8_PITCH*2, NA = 2
//   for gu, else 1. Needs K % 128 == 0 (the launcher checks; other shapes use fp8_dequant).
//   fp8_dequant_<o>_<F>(out, W, S, n, K, G): grid-stride over n = rows*K (over n/16 groups
//       of 16 codes, one 128-bit load each, when K and G are multiples of 16), block 256:
//       out[i] = code * scale, stored as bf16 (b: the prefill path, then cuBLAS on the bf16
//       copy, and shapes the MMA kernels do not take) or f32 (f: exact, for readF32).
//   fp8_embedding_<o>_<F>(out, W, S, G, ids, D): grid (T), block 256: out[t] = the
//       dequantized row ids[t] of an FP8 embedding table (--quantization fp8 quantizes it).
//   fp8_quantize_blk_b(codes, S, w, N, K): grid (ceil(K/128), ceil(N/128)), block 256: block FP8
//       of a bf16 [N, K] matrix, scale = amax/448 per 128x128 block (1 when amax = 0), codes
//       rn-satfinite(w / scale); the scale written to every row of the block (G = 128). The same
//       arithmetic as fp8-quantize.ts quantizeRows (f32 division, round to nearest even).
// No host reads, no allocation: graph-capturable. Tested by test/gpu/fp8-check.ts: every kernel
// against the CPU backend on the same quantized weights, the bf16 kernels on the dequantized
// weights, and quantize codes/scales against quantizeRows.
#include "common.cuh"
#include "mma.cuh"
#include "fp8.cuh"

#define F8_BK 128
#define F8_PITCH (F8_BK + 8)
#define F8_STAGES 4

__device__ __forceinline__ float fp8_scale(const void* S, long long i, bool mx) {
  return mx ? e8m0_to_f32(reinterpret_cast<const unsigned char*>(S)[i])
            : reinterpret_cast<const float*>(S)[i];
}

enum Fp8Mode { F8_GU = 0, F8_DOWN = 1, F8_PLAIN_B = 2, F8_PLAIN_F = 3 };

// One block: 64 weight rows (x2 matrices for GU: gate rows i and up rows I+i) x BT token rows;
// the row and tile bookkeeping is moe.cu's moe_mma. W [E, rowsPerExpert, K] codes,
// S [E, rowsPerExpert, Kg] scales (Kg = ceil(K/G)).
template <int BT, int MODE, bool MX>
__device__ void fp8_mma(const unsigned char* __restrict__ W, const void* __restrict__ S, int G,
                        const bf16_t* __restrict__ Bsrc, const int* perm, int Kw,
                        const int* offsets, const int* tileExpert, const int* tileStart,
                        const int* numTiles, int K, int Nvalid, int rowsPerExpert, int upOffset,
                        void* outp, const float* rw, float alpha, float limit) {
  constexpr bool GU = MODE == F8_GU;
  constexpr int NA = GU ? 2 : 1;
  constexpr int NF = BT / 8;
  constexpr int A_BYTES = NA * 64 * F8_BK;
  constexpr int STAGE_BYTES = A_BYTES + BT * F8_PITCH * 2;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16_t* Ac = reinterpret_cast<bf16_t*>(smem_raw + F8_STAGES * STAGE_BYTES);
  const int tile = blockIdx.y;
  int e = 0, r0, rEnd;
  if (MODE >= F8_PLAIN_B) {
    r0 = tile * BT;
    rEnd = min(r0 + BT, Kw);
  } else {
    if (tile >= *numTiles) return;
    e = tileExpert[tile];
    r0 = tileStart[tile];
    rEnd = min(r0 + BT, offsets[e + 1]);
  }
  const int n0 = blockIdx.x * 64;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int Kg = (K + G - 1) / G;

  // A chunks: 64 rows x 8 chunks of 16 codes per matrix; thread chunk c = tid + 128 j.
  long long aRow[NA][4];
  bool aOk[4];
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const int c = tid + 128 * j, r = c >> 3;
    aOk[j] = n0 + r < Nvalid;
#pragma unroll
    for (int m = 0; m < NA; m++)
      aRow[m][j] = (long long)e * rowsPerExpert + (aOk[j] ? n0 + r : 0) + m * upOffset;
  }
  constexpr int BCH = BT * 16 / 128;
  const bf16_t* bSrc[BCH];
  bool bOk[BCH];
#pragma unroll
  for (int j = 0; j < BCH; j++) {
    const int c = tid + 128 * j, r = c >> 4, kc = (c & 15) * 8;
    const int row = r0 + r;
    bOk[j] = row < rEnd;
    long long src = 0;
    if (bOk[j]) src = GU ? (long long)(perm[row] / Kw) * K : (long long)row * K;
    bSrc[j] = Bsrc + src + kc;
  }
  // BLK: the two C-fragment rows of this thread per matrix, for the per-tile scales.
  long long sRow[NA][2];
#pragma unroll
  for (int m = 0; m < NA; m++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int n = min(n0 + warp * 16 + (lane >> 2) + h * 8, Nvalid - 1);
      sRow[m][h] = ((long long)e * rowsPerExpert + n + m * upOffset) * Kg;
    }

  auto load = [&](int stage, int kt) {
    unsigned char* s = smem_raw + stage * STAGE_BYTES;
    const int koff = kt * F8_BK;
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int c = tid + 128 * j, r = c >> 3, kc = (c & 7) * 16;
#pragma unroll
      for (int m = 0; m < NA; m++)
        cp_async16(s + (m * 64 + r) * F8_BK + kc, W + aRow[m][j] * K + koff + kc, aOk[j]);
    }
    bf16_t* b = reinterpret_cast<bf16_t*>(s + A_BYTES);
#pragma unroll
    for (int j = 0; j < BCH; j++) {
      const int c = tid + 128 * j, r = c >> 4, kc = (c & 15) * 8;
      cp_async16(b + r * F8_PITCH + kc, bSrc[j] + koff, bOk[j]);
    }
  };

  float acc[NA][NF][4];
  float part[NA][NF][4];
#pragma unroll
  for (int m = 0; m < NA; m++)
#pragma unroll
    for (int f = 0; f < NF; f++)
#pragma unroll
      for (int q = 0; q < 4; q++) acc[m][f][q] = 0.f;

  const int KT = K / F8_BK;
#pragma unroll
  for (int s = 0; s < F8_STAGES - 1; s++) {
    if (s < KT) load(s, s);
    cp_commit();
  }
  for (int kt = 0; kt < KT; kt++) {
    cp_wait<F8_STAGES - 2>();
    __syncthreads();  // stage kt landed; the previous tile's MMAs are done with Ac
    const int nxt = kt + F8_STAGES - 1;
    if (nxt < KT) load(nxt % F8_STAGES, nxt);
    cp_commit();
    const unsigned char* st = smem_raw + (kt % F8_STAGES) * STAGE_BYTES;
    // Widen this tile's codes to bf16 (MX: times the row's group scale).
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const int c = tid + 128 * j, r = c >> 3, kc = (c & 7) * 16;
#pragma unroll
      for (int m = 0; m < NA; m++) {
        const uint4 v = *reinterpret_cast<const uint4*>(st + (m * 64 + r) * F8_BK + kc);
        const float mul =
            MX ? fp8_scale(S, aRow[m][j] * Kg + (kt * F8_BK + kc) / G, true) : 1.f;
        uint4 lo, hi;
        widen4(v.x, mul, &lo.x);
        widen4(v.y, mul, &lo.z);
        widen4(v.z, mul, &hi.x);
        widen4(v.w, mul, &hi.z);
        uint4* d = reinterpret_cast<uint4*>(Ac + (m * 64 + r) * F8_PITCH + kc);
        d[0] = lo;
        d[1] = hi;
      }
    }
    __syncthreads();
    const bf16_t* bs = reinterpret_cast<const bf16_t*>(st + A_BYTES);
    float(*dst)[NF][4] = MX ? acc : part;
    if (!MX) {
#pragma unroll
      for (int m = 0; m < NA; m++)
#pragma unroll
        for (int f = 0; f < NF; f++)
#pragma unroll
          for (int q = 0; q < 4; q++) part[m][f][q] = 0.f;
    }
#pragma unroll
    for (int kk = 0; kk < F8_BK; kk += 16) {
      unsigned a[NA][4];
#pragma unroll
      for (int m = 0; m < NA; m++)
        ldsm_x4(a[m][0], a[m][1], a[m][2], a[m][3],
                Ac + (m * 64 + warp * 16 + (lane & 15)) * F8_PITCH + kk + (lane >> 4) * 8);
#pragma unroll
      for (int f = 0; f < NF; f += 2) {
        unsigned b0, b1, b2, b3;
        ldsm_x4(b0, b1, b2, b3,
                bs + (f * 8 + (lane & 7) + (lane >> 4) * 8) * F8_PITCH + kk +
                    ((lane >> 3) & 1) * 8);
#pragma unroll
        for (int m = 0; m < NA; m++) {
          mma16816(dst[m][f], a[m], b0, b1);
          mma16816(dst[m][f + 1], a[m], b2, b3);
        }
      }
    }
    if (!MX) {
      const int g = kt * F8_BK / G;
#pragma unroll
      for (int m = 0; m < NA; m++) {
        const float s0 = fp8_scale(S, sRow[m][0] + g, false);
        const float s1 = fp8_scale(S, sRow[m][1] + g, false);
#pragma unroll
        for (int f = 0; f < NF; f++)
#pragma unroll
          for (int q = 0; q < 4; q++) acc[m][f][q] += (q < 2 ? s0 : s1) * part[m][f][q];
      }
    }
  }
  cp_wait<0>();

  // Epilogue (moe_mma's): C fragment rows = weight rows (n), columns = token rows.
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
      } else if (MODE == F8_PLAIN_B) {
        reinterpret_cast<bf16_t*>(outp)[(long long)row * Nvalid + n] = f2bf(acc[0][f][q]);
      } else if (MODE == F8_PLAIN_F) {
        reinterpret_cast<float*>(outp)[(long long)row * Nvalid + n] = acc[0][f][q];
      } else {
        reinterpret_cast<float*>(outp)[(long long)row * Nvalid + n] = acc[0][f][q] * rw[perm[row]];
      }
    }
  }
}

#define FP8_MMA(F, MXV, BT)                                                                    \
  extern "C" __global__ void __launch_bounds__(128) fp8_gu_##F##_##BT(                         \
      const unsigned char* W, const void* S, int G, const bf16_t* x, const int* perm, int Kw,  \
      const int* offsets, const int* tileExpert, const int* tileStart, const int* numTiles,    \
      int D, int I, bf16_t* act, float alpha, float limit) {                                   \
    fp8_mma<BT, F8_GU, MXV>(W, S, G, x, perm, Kw, offsets, tileExpert, tileStart, numTiles, D, \
                            I, 2 * I, I, act, nullptr, alpha, limit);                          \
  }                                                                                            \
  extern "C" __global__ void __launch_bounds__(128) fp8_down_##F##_##BT(                       \
      const unsigned char* W, const void* S, int G, const bf16_t* act, const int* perm, int Kw, \
      const int* offsets, const int* tileExpert, const int* tileStart, const int* numTiles,    \
      int I, int D, float* y, const float* rw) {                                               \
    fp8_mma<BT, F8_DOWN, MXV>(W, S, G, act, perm, Kw, offsets, tileExpert, tileStart,          \
                              numTiles, I, D, D, 0, y, rw, 0.f, 0.f);                          \
  }                                                                                            \
  extern "C" __global__ void __launch_bounds__(128) fp8_gemm_b_##F##_##BT(                     \
      const unsigned char* W, const void* S, int G, const bf16_t* x, int M, int N, int K,      \
      bf16_t* out) {                                                                           \
    fp8_mma<BT, F8_PLAIN_B, MXV>(W, S, G, x, nullptr, M, nullptr, nullptr, nullptr, nullptr,   \
                                 K, N, N, 0, out, nullptr, 0.f, 0.f);                          \
  }                                                                                            \
  extern "C" __global__ void __launch_bounds__(128) fp8_gemm_f_##F##_##BT(                     \
      const unsigned char* W, const void* S, int G, const bf16_t* x, int M, int N, int K,      \
      float* out) {                                                                            \
    fp8_mma<BT, F8_PLAIN_F, MXV>(W, S, G, x, nullptr, M, nullptr, nullptr, nullptr, nullptr,   \
                                 K, N, N, 0, out, nullptr, 0.f, 0.f);                          \
  }
FP8_MMA(blk, false, 16)
FP8_MMA(blk, false, 32)
FP8_MMA(blk, false, 64)
FP8_MMA(mx, true, 16)
FP8_MMA(mx, true, 32)
FP8_MMA(mx, true, 64)

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
