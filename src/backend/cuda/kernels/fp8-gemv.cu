// Block-FP8 decode GEMMs in GEMV form: out[M, N] = x[M, K] . W[N, K]^T for M <= NF*8 tokens,
// W E4M3 codes with an f32 scale per row and G inputs (G % 128 == 0, tensor/fp8-weight.ts).
//
// Why another loop than skinny-gemm.cu's: that one stages 128 rows x 128 bytes per block and
// step, so the GPU has ~50,000 row segments of 128 bytes in flight, each in another DRAM page;
// it streamed the LM head at 73% of the copy rate (session 6 W2) whatever the widening. Here
// no shared memory holds weights and no barrier paces the stream: every warp owns 16 weight
// rows and a contiguous K range, and each of its lanes loads 16 codes of a row straight into
// registers (ld.global.nc, no L1 allocation, L2 prefetch of 256 bytes), U tiles of 128 inputs
// ahead, so a row is read as U x 128 contiguous bytes per warp step.
// Fragments: lane (g, t) loads codes [64h + 16t, +16) of each 128-input tile (h = 0, 1) of
// rows n0+g and n0+g+8 and the same 16 inputs of token row g (and g + 8f for tile f): the
// MMA's k order is permuted identically for both operands (as skinny-gemm.cu's FP8 path), so
// each 16 codes feed four m16n8k16 bf16 MMAs. The codes widen exactly by bit placement and one
// bf16x2 FMA by 2^120 (skinny-gemm.cu's w8a16); each tile's fp32 partial sums get the weight
// row's block scale: out = sum_tiles s[row, tile] * (x_tile . codes_tile), what the CPU
// computes on code * scale in f32, up to summation order (the same products as w8a16).
// Split-K inside the block: warp w of KS = blockDim.x / 32 sums tiles [w*KT/KS, (w+1)*KT/KS);
// warp 0 adds the KS partials in warp order (deterministic, no workspace, no atomics).
// Kernels (o = b | f output, NF = 8-token MMA tiles 1 / 2 / 4; BT = 8 * NF):
//   fp8_gemv_<o>_<NF>(W, S, G, x, M, N, K, out): grid (ceil(N/(16*GV_MT))), block 32*KS
//       (KS 1..GV_MAX_WARPS), dyn smem KS*GV_MT*NF*4*32*4 bytes when KS > 1 (else 0);
//       K % 128 == 0, M <= NF*8. Each warp owns GV_MT 16-row tiles over its K range.
//   fp8_gemv_gu_<BT>(W, S, G, x, perm, Kw, offsets, tileExpert, tileStart, numTiles, D, I, act,
//       alpha, limit): grid (maxTiles, ceil(I/8)), block 32*KS: act = SwiGLU-OAI(x.gate, x.up)
//   fp8_gemv_down_<BT>(W, S, G, act, perm, Kw, offsets, tileExpert, tileStart, numTiles, I, D,
//       y, rw): grid (maxTiles, ceil(D/16)), block 32*KS: y[row] = rw * act[row] . down^T
//   (moe.cu moe_scan's tile table; tiles along x, so that the tiles of one expert, e.g. the
//   shared expert's T/BT, read the same weight rows at about the same time, from L2 after the
//   first.)
// -D GV_U (tiles in flight per warp), GV_PF (L2 prefetch hint), GV_PIPE (double-buffered
// weight registers), GV_MT (16-row tiles per warp, plain GEMM only) and GV_LB (launch bounds)
// are knobs: matmul sets them per token count (fp8-gemv.ts gemvTuneFor). Session 12 also
// tried and removed warps sharing a K range through L1 and an L1 prefetch of the next tile's x
// (docs/benchmarks/fp8.md, W5 and W7).
// Launched to overlap the previous kernel (programmatic dependent launch): the first U tiles
// of weights and scales are loaded before griddepcontrol.wait, x after it.
// No host reads, no allocation: graph-capturable. Tested by test/gpu/skinny-check.ts against
// the CPU backend on the same quantized weights (ragged M and N, KS 1 / 3 / automatic, group
// scaled activations, f32 and bf16 out) and a repeated launch bit for bit.
#include "common.cuh"
#include "mma.cuh"
#include "fp8.cuh"


/** 16 weight codes, streamed: not kept in L1, L2 asked to fetch the 256 bytes around them. */
__device__ __forceinline__ uint4 gv_ld_stream(const unsigned char* p) {
  uint4 v;
#if GV_PF
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
#else
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
#endif
  return v;
}

// Tuning (benchmarks): GV_U tiles of weights in flight per warp at NF = 1 (0: the default),
// GV_PF the L2 prefetch hint of the weight loads (1: 256 bytes, 0: none).
#ifndef GV_U
#define GV_U 0
#endif
#ifndef GV_PF
#define GV_PF 1
#endif
// GV_PIPE 1: two register buffers of U tiles, the next one's loads issued before the current
// one's MMAs (0: one buffer, loaded after its MMAs).
#ifndef GV_PIPE
#define GV_PIPE 0
#endif
// GV_MT: 16-row weight tiles per warp in the plain GEMM (the MoE modes keep 1), sharing each
// x fragment load: at 32 token rows a warp otherwise reads 4 bytes of x per weight byte.
#ifndef GV_MT
#define GV_MT 1
#endif
// GV_LB 1: at most 8 warps per block, so up to 255 registers a thread: room for the two
// register buffers at 32 tokens (session 12 W11: 0.0268 against 0.0275 ms on q_proj).
#ifndef GV_LB
#define GV_LB 0
#endif
// Up to 16 warps per block (128 registers each); 8 with several 16-row tiles a warp or GV_LB.
#define GV_MAX_WARPS (GV_MT > 1 || GV_LB ? 8 : 16)
// Tiles per buffer: GV_U (or 4, double-buffered 2) at NF = 1, half of that for more token rows.
template <int NF>
struct GvShape {
  static constexpr int U1 = GV_U > 0 ? GV_U : GV_PIPE ? 2 : 4;
  static constexpr int U = NF == 1 ? U1 : (U1 / 2 > 0 ? U1 / 2 : 1);
};

/**
 * One tile of 128 inputs for MT 16-row weight tiles: part[m][f] += codes (rows 16m + g,
 * 16m + g + 8) . x (token rows f*8 + g). The x fragments are loaded once for all MT tiles.
 */
template <int NF, int MT>
__device__ __forceinline__ void gv_tile(float (*acc)[NF][4], const uint4 (*w)[2][2],
                                        const float (*s)[2], const bf16_t* const* xr,
                                        const bool* xok, int k) {
  float part[MT][NF][4];
#pragma unroll
  for (int m = 0; m < MT; m++)
#pragma unroll
    for (int f = 0; f < NF; f++)
#pragma unroll
      for (int q = 0; q < 4; q++) part[m][f][q] = 0.f;
#pragma unroll
  for (int h = 0; h < 2; h++) {
    uint4 xv[NF][2];
#pragma unroll
    for (int f = 0; f < NF; f++) {
      const uint4* p = reinterpret_cast<const uint4*>(xr[f] + k + 64 * h);
      xv[f][0] = xok[f] ? p[0] : make_uint4(0u, 0u, 0u, 0u);
      xv[f][1] = xok[f] ? p[1] : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int m = 0; m < MT; m++) {
      const unsigned v0[4] = {w[m][h][0].x, w[m][h][0].y, w[m][h][0].z, w[m][h][0].w};
      const unsigned v1[4] = {w[m][h][1].x, w[m][h][1].y, w[m][h][1].z, w[m][h][1].w};
#pragma unroll
      for (int j = 0; j < 4; j++) {
        unsigned a[4];
        e4m3x4_widen_bf16(v0[j], a[0], a[2]);
        e4m3x4_widen_bf16(v1[j], a[1], a[3]);
#pragma unroll
        for (int f = 0; f < NF; f++) {
          const uint4 xq = xv[f][j >> 1];
          const unsigned b0 = (j & 1) ? xq.z : xq.x, b1 = (j & 1) ? xq.w : xq.y;
          mma16816(part[m][f], a, b0, b1);
        }
      }
    }
  }
#pragma unroll
  for (int m = 0; m < MT; m++)
#pragma unroll
    for (int f = 0; f < NF; f++)
#pragma unroll
      for (int q = 0; q < 4; q++) acc[m][f][q] += (q < 2 ? s[m][0] : s[m][1]) * part[m][f][q];
}

enum GvMode { GV_PLAIN = 0, GV_GU = 1, GV_DOWN = 2 };

// The MoE modes' tile: expert e, token rows [r0, rEnd) of the permuted order (moe.cu moe_scan).
struct GvTiles {
  const int* perm;
  int Kw;
  const int* offsets;
  const int* tileExpert;
  const int* tileStart;
  const int* numTiles;
};

// One block: 16 weight rows (GU: 8 gate rows n0 + g and their 8 up rows, I further) x up to
// NF*8 token rows, its KS warps splitting K. PLAIN: x row = token row; GU: x row =
// perm[row] / Kw, out = act [rows, I] bf16 of SwiGLU-OAI; DOWN: x = act, out = y [rows, D] f32
// times the routing weight rw[perm[row]].
template <int NF, int MODE>
__device__ void fp8_gemv(const unsigned char* __restrict__ W, const float* __restrict__ S, int G,
                         const bf16_t* __restrict__ X, int M, int N, int K, void* outp,
                         bool outF32, GvTiles tl, int upOffset, const float* rw, float alpha,
                         float limit) {
  constexpr int U = GvShape<NF>::U;
  constexpr bool GU = MODE == GV_GU;
  constexpr int MT = MODE == GV_PLAIN ? GV_MT : 1;
  extern __shared__ float red[];  // KS > 1: [KS][MT][NF*4][32] partial sums
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, KS = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int KT = K / 128, Kg = (K + G - 1) / G;
  const int kt0 = warp * KT / KS, kt1 = (warp + 1) * KT / KS;
  long long rowBase = 0;
  int r0 = 0, rEnd = M;
  if (MODE != GV_PLAIN) {
    grid_dep_wait();  // the tile table is the previous kernels' output
    const int tile = blockIdx.x;
    if (tile >= *tl.numTiles) return;
    const int e = tl.tileExpert[tile];
    r0 = tl.tileStart[tile];
    rEnd = min(r0 + NF * 8, tl.offsets[e + 1]);
    rowBase = (long long)e * (GU ? 2 * N : N);
  }
  const int n0 = MODE == GV_PLAIN ? blockIdx.x * 16 * MT : blockIdx.y * (GU ? 8 : 16);
  const unsigned char* wa[MT];
  const unsigned char* wb[MT];
  const float* sa[MT];
  const float* sb[MT];
#pragma unroll
  for (int m = 0; m < MT; m++) {
    const long long ra = rowBase + min(n0 + 16 * m + g, N - 1);
    const long long rb = GU ? ra + upOffset : rowBase + min(n0 + 16 * m + g + 8, N - 1);
    wa[m] = W + ra * K + 16 * t;
    wb[m] = W + rb * K + 16 * t;
    sa[m] = S + ra * Kg;
    sb[m] = S + rb * Kg;
  }
  float acc[MT][NF][4];
#pragma unroll
  for (int m = 0; m < MT; m++)
#pragma unroll
    for (int f = 0; f < NF; f++)
#pragma unroll
      for (int q = 0; q < 4; q++) acc[m][f][q] = 0.f;

  uint4 w[U][MT][2][2], w2[GV_PIPE ? U : 1][MT][2][2];
  float s[U][MT][2], s2[GV_PIPE ? U : 1][MT][2];
  auto loadInto = [&](uint4 (*wd)[MT][2][2], float (*sd)[MT][2], int kt) {
#pragma unroll
    for (int u = 0; u < U; u++) {
      const int k = min(kt + u, kt1 - 1) * 128;  // past the range: a repeat, not used
#pragma unroll
      for (int m = 0; m < MT; m++) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
          wd[u][m][h][0] = gv_ld_stream(wa[m] + k + 64 * h);
          wd[u][m][h][1] = gv_ld_stream(wb[m] + k + 64 * h);
        }
        sd[u][m][0] = __ldg(sa[m] + k / G);
        sd[u][m][1] = __ldg(sb[m] + k / G);
      }
    }
  };
  auto loadW = [&](int kt) { loadInto(w, s, kt); };
  if (kt0 < kt1) loadW(kt0);
  if (MODE == GV_PLAIN) grid_dep_wait();  // x may be the previous kernel's output
  grid_dep_launch();
  const bf16_t* xr[NF];
  bool xok[NF];
#pragma unroll
  for (int f = 0; f < NF; f++) {
    const int row = r0 + f * 8 + g;
    // The plain GEMM's token rows past M read x row 0 instead of zeros (xok constant true, so
    // no select per load: session 12 W11, 20% fewer instructions at 32 tokens): an MMA column
    // depends on its own B column only, and that column's outputs are not stored. The MoE
    // modes keep zeros.
    xok[f] = MODE == GV_PLAIN || row < rEnd;
    const int xrow = row >= rEnd ? 0 : GU ? tl.perm[row] / tl.Kw : row;
    xr[f] = X + (long long)xrow * K + 16 * t;
  }
  auto mmas = [&](const uint4 (*wd)[MT][2][2], const float (*sd)[MT][2], int kt) {
#pragma unroll
    for (int u = 0; u < U; u++)
      if (kt + u < kt1) gv_tile<NF, MT>(acc, wd[u], sd[u], xr, xok, (kt + u) * 128);
  };
  if constexpr (GV_PIPE) {
    for (int kt = kt0; kt < kt1; kt += 2 * U) {
      if (kt + U < kt1) loadInto(w2, s2, kt + U);
      mmas(w, s, kt);
      if (kt + 2 * U < kt1) loadW(kt + 2 * U);
      if (kt + U < kt1) mmas(w2, s2, kt + U);
    }
  } else {
    for (int kt = kt0; kt < kt1; kt += U) {
      mmas(w, s, kt);
      if (kt + U < kt1) loadW(kt + U);
    }
  }

  if (KS > 1) {
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
      for (int f = 0; f < NF; f++)
#pragma unroll
        for (int q = 0; q < 4; q++)
          red[(((warp * MT + m) * NF + f) * 4 + q) * 32 + lane] = acc[m][f][q];
    __syncthreads();
    if (warp != 0) return;
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
      for (int f = 0; f < NF; f++)
#pragma unroll
        for (int q = 0; q < 4; q++) {
          float v = red[((m * NF + f) * 4 + q) * 32 + lane];
          for (int p = 1; p < KS; p++)
            v += red[(((p * MT + m) * NF + f) * 4 + q) * 32 + lane];
          acc[m][f][q] = v;
        }
  }
  // C fragment: rows = weight rows 16m + g (q 0, 1) and 16m + g + 8 (q 2, 3; GU: the up rows),
  // columns = token rows 2t, 2t + 1.
#pragma unroll
  for (int m = 0; m < MT; m++)
#pragma unroll
    for (int f = 0; f < NF; f++)
#pragma unroll
      for (int q = 0; q < 4; q++) {
        if (GU && q >= 2) continue;
        const int n = n0 + 16 * m + g + (q >> 1) * 8, row = r0 + f * 8 + 2 * t + (q & 1);
        if (n >= N || row >= rEnd) continue;
        const long long o = (long long)row * N + n;
        const float v = acc[m][f][q];
        if (GU)
          reinterpret_cast<bf16_t*>(outp)[o] = f2bf(swiglu_oai(v, acc[m][f][q + 2], alpha, limit));
        else if (MODE == GV_DOWN)
          reinterpret_cast<float*>(outp)[o] = v * rw[tl.perm[row]];
        else if (outF32)
          reinterpret_cast<float*>(outp)[o] = v;
        else
          reinterpret_cast<bf16_t*>(outp)[o] = f2bf(v);
      }
}

#define FP8_GEMV(O, OF, NF)                                                                    \
  extern "C" __global__ void __launch_bounds__(32 * GV_MAX_WARPS) fp8_gemv_##O##_##NF(         \
      const unsigned char* W, const float* S, int G, const bf16_t* x, int M, int N, int K,     \
      void* out) {                                                                             \
    fp8_gemv<NF, GV_PLAIN>(W, S, G, x, M, N, K, out, OF, GvTiles{}, 0, nullptr, 0.f, 0.f);   \
  }
FP8_GEMV(b, false, 1)
FP8_GEMV(b, false, 2)
FP8_GEMV(b, false, 4)
FP8_GEMV(f, true, 1)
FP8_GEMV(f, true, 2)
FP8_GEMV(f, true, 4)

#define FP8_GEMV_MOE(BT)                                                                         \
  extern "C" __global__ void __launch_bounds__(32 * GV_MAX_WARPS) fp8_gemv_gu_##BT(              \
      const unsigned char* W, const float* S, int G, const bf16_t* x, const int* perm, int Kw,   \
      const int* offsets, const int* tileExpert, const int* tileStart, const int* numTiles,      \
      int D, int I, bf16_t* act, float alpha, float limit) {                                     \
    fp8_gemv<BT / 8, GV_GU>(W, S, G, x, 0, I, D, act, false,                                     \
                            GvTiles{perm, Kw, offsets, tileExpert, tileStart, numTiles}, I,      \
                            nullptr, alpha, limit);                                              \
  }                                                                                              \
  extern "C" __global__ void __launch_bounds__(32 * GV_MAX_WARPS) fp8_gemv_down_##BT(            \
      const unsigned char* W, const float* S, int G, const bf16_t* act, const int* perm, int Kw, \
      const int* offsets, const int* tileExpert, const int* tileStart, const int* numTiles,      \
      int I, int D, float* y, const float* rw) {                                                 \
    fp8_gemv<BT / 8, GV_DOWN>(W, S, G, act, 0, D, I, y, true,                                    \
                              GvTiles{perm, Kw, offsets, tileExpert, tileStart, numTiles}, 0,    \
                              rw, 0.f, 0.f);                                                     \
  }
FP8_GEMV_MOE(8)
FP8_GEMV_MOE(16)
FP8_GEMV_MOE(32)
