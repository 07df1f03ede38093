// Memory-bound skinny GEMMs for decode: out[M, N] = x[M, K] . W[N, K]^T for M <= 64 tokens,
// with the weight in bf16 or FP8 (E4M3 codes + per-row group scales, tensor/fp8-weight.ts:
// blk = f32 scale_inv per 128-input block, mx = UE8M0 per 16/32 inputs), and the same loop as
// the MoE's grouped FP8 expert GEMMs (fused gate|up + SwiGLU-OAI, and down).
//
// Why it is fast: the weight streams through a cp.async pipeline of 128-byte row slices
// (STAGES deep, >= 2 blocks per SM) and is fed to the bf16 tensor-core MMA (m16n8k16, fp32
// accumulation) straight from shared memory into registers: no widened copy, no extra barrier.
// Each thread owns 16 consecutive bytes of a row slice, so its A fragments come from one
// 128-bit shared load; the MMA's k order is permuted the same way for the activations (a dot
// product does not care which k is summed in which step), so x is read with 128-bit loads too.
// FP8 codes widen in registers, exactly: sign | (exp|mant) << 4 is the bf16 of code * 2^-120,
// then one bf16x2 FMA by 2^120 (MX: then by the group's power of two, exact barring
// under/overflow). Block FP8 applies its f32 scale to each 128-input tile's fp32 partial sums:
// out = sum_tiles s[row, tile] * (x_tile . codes_tile) = x . (codes * s), what the CPU computes
// after dequantizing at load, up to summation order.
// q8 (block FP8 on the E4M3 tensor cores, the decode path for block FP8): widening costs
// about 2.5 integer operations per code, which bounds the loop at about 70% of the copy rate;
// q8 feeds the codes to mma m16n8k32 e4m3 as they are. x is first split by skinny_split_x
// into two E4M3 terms with a power-of-two scale s per 128 inputs, x = (hi + lo) * s (exact for
// |x| >= s/4, within s * 2^-10 below), and each weight fragment meets hi and lo in two MMAs:
// the same products as W8A16 on the bf16 x up to that split. Each 128-input tile's fp32
// partials get the weight row's block scale times the token row's s (carried in the stage).
// Split-K (dense only, grid z = S): split z sums k-tiles [z*KT/S, (z+1)*KT/S) into
// part[z, M, N] (f32 workspace); the last block of a column block to finish (counter per
// column block and token slice, atomicAdd after a fence) adds the S partials in split order
// (deterministic) and writes out, then resets its counter to 0 (counters start zeroed, graph
// replays keep them). Dense token slices (grid y): block y takes token rows [y*NF*8, +NF*8),
// so a small-N GEMM at large M spreads over more blocks (and a smaller reduction per block)
// while its weight, read by every slice at about the same time, comes from L2 after the first.
//
// Kernels (W = b | blk | mx | q8 weight; o = b | f output; NF = 8-token MMA tiles, 1/2/4/8):
//   skinny_<W>_<o>_<NF>(W, S, G, x, xs, M, N, K, out, part, counters)
//       grid (ceil(N/128), ceil(M/(NF*8)), S), block 128 (4 warps x 32 weight rows), dyn smem
//       STAGES*(128*128 + NF*8*XB [+ NF*8*4 q8]), XB = 256 (FP8: 128 inputs per stage; q8: 128
//       hi + 128 lo codes) or 128 (bf16: 64), STAGES = 3 for FP8 with NF = 8, else 4. Needs
//       K % 128 (FP8) or % 64 (bf16) == 0. q8: x, xs = skinny_split_x's xq, xs; else xs unused.
//   skinny_gu_<F>_<BT>(W, S, G, x, xs, perm, Kw, offsets, tileExpert, tileStart, numTiles, D,
//       I, act, alpha, limit): grid (ceil(I/64), maxTiles), block 128: act = SwiGLU(x.gate, x.up)
//   skinny_down_<F>_<BT>(W, S, G, act, xs, perm, Kw, offsets, tileExpert, tileStart, numTiles,
//       I, D, y, rw): grid (ceil(D/128), maxTiles), block 128: y[row] = rw * act[row] . down^T
//   (F = b | blk | mx | q8 | h8, BT = 16/32/64 token rows per MoE tile, the tile table of
//   moe.cu moe_scan; q8 takes the split x and the split act, h8 both scaled to f16; b: bf16
//   experts, the alternative to moe.cu's moe_mma_* tiles.)
// (q8's and h8's x conversions, skinny_split_x and skinny_half_x, are in skinny-x.cu.)
// No host reads, no allocation: graph-capturable. Tested by test/gpu/skinny-check.ts: every
// variant against the CPU backend on the same (quantized) weights, split and unsplit, ragged
// M and N; test/gpu/split-check.ts: the split bit for bit against its host twin; the MoE
// kernels by test/gpu/fp8-check.ts through moe().
#include "common.cuh"
#include "mma.cuh"
#include "fp8.cuh"

#define SK_ROWB 128
// SK_Q8: block FP8 weights on the E4M3 tensor cores, x split exactly into two E4M3 terms.
// SK_H8: block FP8 widened by the hardware E4M3 -> f16 conversion, f16 MMA on x scaled to f16.
enum SkWeight { SK_BF16 = 0, SK_BLK = 1, SK_MX = 2, SK_Q8 = 3, SK_H8 = 4 };
enum SkMode { SK_PLAIN = 0, SK_GU = 1, SK_DOWN = 2 };

__device__ __forceinline__ unsigned bf2_fma(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ __forceinline__ unsigned prmt(unsigned a, unsigned sel) {
  unsigned d;
  asm("prmt.b32 %0, %1, 0, %2;" : "=r"(d) : "r"(a), "r"(sel));
  return d;
}
/** Codes 0,1 (lo) and 2,3 (hi) of w as bf16 pairs of code * 2^-120 (bit placement, exact). */
__device__ __forceinline__ void e4m3x4_raw(unsigned w, unsigned& lo, unsigned& hi) {
  const unsigned a = prmt(w, 0x1404u), b = prmt(w, 0x3424u);
  lo = (a & 0x80008000u) | ((a >> 4) & 0x07f007f0u);
  hi = (b & 0x80008000u) | ((b >> 4) & 0x07f007f0u);
}
#define BF2_2P120 0x7b807b80u
#define BF2_NEG0 0x80008000u
/** UE8M0 s as a bf16 pair of 2^(s-127) (0: 2^-127 subnormal, 255: NaN). */
__device__ __forceinline__ unsigned e8m0_bf2(unsigned s) {
  const unsigned h = s == 0u ? 0x0040u : s == 255u ? 0x7fc0u : s << 7;
  return h | (h << 16);
}
/** Codes 0,1 (lo) and 2,3 (hi) of w as f16 pairs of their values (cvt, exact: E4M3 is in f16). */
__device__ __forceinline__ void e4m3x4_f16(unsigned w, unsigned& lo, unsigned& hi) {
  asm("{\n\t.reg .b16 a, b;\n\tmov.b32 {a, b}, %2;\n\t"
      "cvt.rn.f16x2.e4m3x2 %0, a;\n\tcvt.rn.f16x2.e4m3x2 %1, b;\n\t}"
      : "=r"(lo), "=r"(hi) : "r"(w));
}
/** c += a . b on f16 operands (m16n8k16, fp32 accumulation; registers as mma16816's). */
__device__ __forceinline__ void mma_f16(float* c, const unsigned* a, unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
/** An L2 read (another block's partial sums, written during this kernel). */
__device__ __forceinline__ float ld_cg(const float* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ uint4 lds128(const unsigned char* p) {
  return *reinterpret_cast<const uint4*>(p);
}
/** A 4-byte cp.async (L1-allocating .ca: 4 and 8 bytes cannot bypass it), zero-filled if !valid. */
__device__ __forceinline__ void cp_async4(void* smem, const void* gmem, bool valid) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  const int sz = valid ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gmem), "r"(sz));
}
/** c += a . b on E4M3 operands (m16n8k32, fp32 accumulation; registers as mma16816's). */
__device__ __forceinline__ void mma_e4m3(float* c, unsigned a0, unsigned a1, unsigned a2,
                                         unsigned a3, unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Q8, one stage: part[mi][f] += the stage's 128 inputs of weight rows (slots) x token rows.
// Thread t reads its 16-byte unit 4ch+t of rows g and g+8 (16 codes each); words p, p+1 of
// the unit are A's two k halves (a0/a2 row g, a1/a3 row g+8) of two MMAs, one against x's hi
// codes of the same 8 inputs, one against its lo codes; the k order is the same permutation
// for A and B. x rows hold 8 hi units then 8 lo units, unit u at u ^ ((r & 1) << 2).
template <int NF>
__device__ __forceinline__ void q8Stage(float (*part)[NF][4], const unsigned char* st,
                                        const int* slotA, int g, int t) {
  constexpr int NM = 2, A_BYTES = 64 * NM * SK_ROWB, XB = 256;
#pragma unroll
  for (int ch = 0; ch < 2; ch++) {
    uint4 w[NM][2];
#pragma unroll
    for (int mi = 0; mi < NM; mi++) {
      const int s = slotA[mi], u = (4 * ch + t) ^ ((s & 1) << 2);
      w[mi][0] = lds128(st + s * SK_ROWB + u * 16);
      w[mi][1] = lds128(st + (s + 8) * SK_ROWB + u * 16);
    }
#pragma unroll
    for (int f = 0; f < NF; f++) {
      const int r = f * 8 + g, sw = (r & 1) << 2;
      const unsigned char* xr = st + A_BYTES + r * XB;
      const uint4 h = lds128(xr + ((4 * ch + t) ^ sw) * 16);
      const uint4 l = lds128(xr + ((8 + 4 * ch + t) ^ sw) * 16);
      const unsigned hv[4] = {h.x, h.y, h.z, h.w}, lv[4] = {l.x, l.y, l.z, l.w};
#pragma unroll
      for (int mi = 0; mi < NM; mi++) {
        const unsigned w0[4] = {w[mi][0].x, w[mi][0].y, w[mi][0].z, w[mi][0].w};
        const unsigned w1[4] = {w[mi][1].x, w[mi][1].y, w[mi][1].z, w[mi][1].w};
#pragma unroll
        for (int p = 0; p < 4; p += 2) {
          mma_e4m3(part[mi][f], w0[p], w1[p], w0[p + 1], w1[p + 1], hv[p], hv[p + 1]);
          mma_e4m3(part[mi][f], w0[p], w1[p], w0[p + 1], w1[p + 1], lv[p], lv[p + 1]);
        }
      }
    }
  }
}

template <int WT, int NF>
struct SkShape {
  static constexpr int WB = WT == SK_BF16 ? 2 : 1;      // weight bytes per element
  static constexpr int BK = SK_ROWB / WB;               // inputs per stage
  static constexpr int XB = BK * 2;                     // x bytes per token row per stage
  static constexpr int STEPS = 4 / WB;                  // k16 MMA steps per 16-byte slice
  static constexpr int STAGES = (WT != SK_BF16 && NF == 8) ? 3 : 4;
};

// One block: 4 warps x NM m-tiles of 16 weight rows ("slots") x NF*8 token rows. GU: NM = 2,
// m-tile 0 the gate rows n0 + w*16 + r, m-tile 1 the up rows (upOffset further).
template <int WT, int NF, int MODE>
__device__ void skinny(const unsigned char* __restrict__ W, const void* __restrict__ S, int G,
                       const bf16_t* __restrict__ X, const float* __restrict__ XS, const int* perm,
                       int Kw, const int* offsets,
                       const int* tileExpert, const int* tileStart, const int* numTiles, int M,
                       int K, int Nvalid, int rowsPerExpert, int upOffset, void* outp, bool outF32,
                       float* part, int* counters, const float* rw, float alpha, float limit) {
  using Sh = SkShape<WT, NF>;
  constexpr int NM = 2, SLOTS = 64 * NM, WB = Sh::WB, BK = Sh::BK, XB = Sh::XB;
  constexpr int STAGES = Sh::STAGES, STEPS = Sh::STEPS;
  // Q8 / H8 stages end with the token rows' x scales of the stage's 128 inputs (f32 each).
  constexpr int A_BYTES = SLOTS * SK_ROWB, XS_AT = A_BYTES + NF * 8 * XB;
  constexpr int STAGE_BYTES = XS_AT + (WT == SK_Q8 || WT == SK_H8 ? NF * 8 * 4 : 0);
  constexpr bool GU = MODE == SK_GU;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ int isLast;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;

  int e = 0, r0 = 0, rEnd = M;
  if (MODE != SK_PLAIN) {
    const int tile = blockIdx.y;
    if (tile >= *numTiles) return;
    e = tileExpert[tile];
    r0 = tileStart[tile];
    rEnd = min(r0 + NF * 8, offsets[e + 1]);
  } else {
    r0 = blockIdx.y * NF * 8;  // token slice y (dense: grid y = ceil(M / (NF*8)))
    rEnd = min(r0 + NF * 8, M);
  }
  const int n0 = blockIdx.x * (GU ? 64 : SLOTS);
  // Output index n and weight row of a slot.
  auto slotN = [&](int s) { return GU ? n0 + (s >> 5) * 16 + (s & 15) : n0 + s; };
  auto slotRow = [&](int s) {
    const int n = min(slotN(s), Nvalid - 1);
    return (long long)e * rowsPerExpert + n + (GU && ((s >> 4) & 1) ? upOffset : 0);
  };

  // BLKS: f32 scale per tile; XSC: and the token rows' x scales per stage (q8, h8).
  constexpr bool Q8 = WT == SK_Q8, H8 = WT == SK_H8, XSC = Q8 || H8;
  constexpr bool BLKS = WT == SK_BLK || XSC;
  const int Kg = WT == SK_BF16 ? 1 : (K + G - 1) / G;
  const int KT = K / BK, nsplit = gridDim.z, z = blockIdx.z;
  const int kt0 = (int)((long long)z * KT / nsplit), kt1 = (int)((long long)(z + 1) * KT / nsplit);

  // cp.async sources. A: SLOTS rows x 8 units of 16 bytes; unit u of slot s lands at
  // u ^ ((s & 1) << 2) (conflict-free 128-bit reads of rows g and g+1 by one quarter warp).
  constexpr int AJ = SLOTS * 8 / 128;
  const unsigned char* aSrc[AJ];
  bool aOk[AJ];
#pragma unroll
  for (int j = 0; j < AJ; j++) {
    const int c = tid + 128 * j, s = c >> 3;
    aOk[j] = slotN(s) < Nvalid;
    aSrc[j] = W + slotRow(s) * (long long)K * WB + (c & 7) * 16;
  }
  // x: NF*8 token rows x XB/16 units; FP8 rows (16 units) land at u ^ (r & 1), bf16 rows
  // (8 units) and Q8 rows (8 hi units, 8 lo units) at u ^ ((r & 1) << 2). Q8's x is the split
  // buffer (two E4M3 bytes per input, skinny_split_x), addressed as 2-byte elements like bf16;
  // H8's the f16 buffer of skinny_half_x, laid out as bf16's.
  constexpr int XU = XB / 16, XCH = NF * 8 * XU, XJ = (XCH + 127) / 128;
  constexpr int XSW = (XU == 16 && !Q8) ? 1 : 4;
  const bf16_t* xSrc[XJ];
  bool xOk[XJ];
#pragma unroll
  for (int j = 0; j < XJ; j++) {
    const int c = tid + 128 * j, r = c / XU, row = r0 + r;
    xOk[j] = c < XCH && row < rEnd;
    long long src = 0;
    if (xOk[j]) src = (MODE == SK_GU ? (long long)(perm[row] / Kw) : (long long)row) * K;
    xSrc[j] = X + src + (c % XU) * 8;
  }
  // Q8 / H8: thread tid < NF*8 copies token row r0 + tid's x scale of each stage.
  const float* xsSrc = XS;
  bool xsOk = false;
  if (XSC && tid < NF * 8 && r0 + tid < rEnd) {
    const int row = r0 + tid;
    xsOk = true;
    xsSrc = XS + (long long)(MODE == SK_GU ? perm[row] / Kw : row) * (K / 128);
  }
  auto loadW = [&](int stage, int kt) {
    unsigned char* st = smem_raw + stage * STAGE_BYTES;
#pragma unroll
    for (int j = 0; j < AJ; j++) {
      const int c = tid + 128 * j, s = c >> 3, u = (c & 7) ^ ((s & 1) << 2);
      cp_async16(st + s * SK_ROWB + u * 16, aSrc[j] + (long long)kt * SK_ROWB, aOk[j]);
    }
  };
  auto loadX = [&](int stage, int kt) {
    unsigned char* st = smem_raw + stage * STAGE_BYTES;
#pragma unroll
    for (int j = 0; j < XJ; j++) {
      const int c = tid + 128 * j, r = c / XU;
      const int u = (c % XU) ^ (XSW == 1 ? (r & 1) : ((r & 1) << 2));
      if (c < XCH) cp_async16(st + A_BYTES + r * XB + u * 16, xSrc[j] + (long long)kt * BK, xOk[j]);
    }
    if (XSC && tid < NF * 8) cp_async4(st + XS_AT + tid * 4, xsSrc + kt, xsOk);
  };
  auto load = [&](int stage, int kt) {
    loadW(stage, kt);
    loadX(stage, kt);
  };

  // Fragment slots of this thread: m-tile mi rows g (a0/a2) and g+8 (a1/a3).
  int slotA[NM];
#pragma unroll
  for (int mi = 0; mi < NM; mi++) slotA[mi] = warp * 16 * NM + mi * 16 + g;
  long long sRow[NM][2];
#pragma unroll
  for (int mi = 0; mi < NM; mi++)
#pragma unroll
    for (int h = 0; h < 2; h++) sRow[mi][h] = slotRow(slotA[mi] + 8 * h) * Kg;

  float acc[NM][NF][4], part_[NM][NF][4];
#pragma unroll
  for (int mi = 0; mi < NM; mi++)
#pragma unroll
    for (int f = 0; f < NF; f++)
#pragma unroll
      for (int q = 0; q < 4; q++) acc[mi][f][q] = 0.f;

  // Prologue: the weight stages first (constant: they may stream while the previous kernel
  // finishes, when this one was launched to overlap it), then wait for that kernel (a no-op
  // otherwise) before reading x or writing anything. Group 0 holds every prologue weight
  // stage and x stage 0, group s x stage s: stage s has landed once group s has.
#pragma unroll
  for (int s = 0; s < STAGES - 1; s++)
    if (kt0 + s < kt1) loadW(s, kt0 + s);
  grid_dep_wait();
#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (kt0 + s < kt1) loadX(s, kt0 + s);
    cp_commit();
  }
  grid_dep_launch();
  for (int kt = kt0; kt < kt1; kt++) {
    // Block FP8: this tile's row scales, loaded before the barrier so the wait hides them.
    float sc[NM][2];
    if constexpr (BLKS) {
      const float* sf = reinterpret_cast<const float*>(S);
#pragma unroll
      for (int mi = 0; mi < NM; mi++)
#pragma unroll
        for (int h = 0; h < 2; h++) sc[mi][h] = sf[sRow[mi][h] + kt * BK / G];
    }
    cp_wait<STAGES - 2>();
    __syncthreads();  // stage kt landed; every warp is done with the stage refilled next
    const int nxt = kt + STAGES - 1;
    if (nxt < kt1) load((nxt - kt0) % STAGES, nxt);
    cp_commit();
    const unsigned char* st = smem_raw + ((kt - kt0) % STAGES) * STAGE_BYTES;
    float(*dst)[NF][4] = BLKS ? part_ : acc;
    if (BLKS) {
#pragma unroll
      for (int mi = 0; mi < NM; mi++)
#pragma unroll
        for (int f = 0; f < NF; f++)
#pragma unroll
          for (int q = 0; q < 4; q++) part_[mi][f][q] = 0.f;
    }
    if constexpr (Q8) q8Stage<NF>(part_, st, slotA, g, t);
#pragma unroll
    for (int ch = 0; ch < 2 && !Q8; ch++) {
      // A fragments for STEPS k16 steps of both m-tiles from one 16-byte slice per row.
      unsigned a[NM][STEPS][4];
#pragma unroll
      for (int mi = 0; mi < NM; mi++) {
        const int s = slotA[mi], u = (4 * ch + t) ^ ((s & 1) << 2);
        const uint4 w0 = lds128(st + s * SK_ROWB + u * 16);
        const uint4 w1 = lds128(st + (s + 8) * SK_ROWB + u * 16);
        const unsigned v0[4] = {w0.x, w0.y, w0.z, w0.w}, v1[4] = {w1.x, w1.y, w1.z, w1.w};
        if constexpr (WT == SK_BF16) {
#pragma unroll
          for (int j = 0; j < STEPS; j++) {
            a[mi][j][0] = v0[2 * j];
            a[mi][j][2] = v0[2 * j + 1];
            a[mi][j][1] = v1[2 * j];
            a[mi][j][3] = v1[2 * j + 1];
          }
        } else if constexpr (H8) {
#pragma unroll
          for (int j = 0; j < STEPS; j++) {
            e4m3x4_f16(v0[j], a[mi][j][0], a[mi][j][2]);
            e4m3x4_f16(v1[j], a[mi][j][1], a[mi][j][3]);
          }
        } else {
          unsigned m0 = BF2_2P120, m1 = BF2_2P120;
          if (WT == SK_MX) {
            // One group per 16-byte slice (G % 16 == 0): rows g and g+8 scales.
            const int grp = (kt * BK + ch * 64 + t * 16) / G;
            const unsigned char* s8 = reinterpret_cast<const unsigned char*>(S);
            m0 = e8m0_bf2(s8[sRow[mi][0] + grp]);
            m1 = e8m0_bf2(s8[sRow[mi][1] + grp]);
          }
#pragma unroll
          for (int j = 0; j < STEPS; j++) {
            unsigned lo, hi;
            e4m3x4_raw(v0[j], lo, hi);
            lo = bf2_fma(lo, BF2_2P120, BF2_NEG0);
            hi = bf2_fma(hi, BF2_2P120, BF2_NEG0);
            if (WT == SK_MX) {
              lo = bf2_fma(lo, m0, BF2_NEG0);
              hi = bf2_fma(hi, m0, BF2_NEG0);
            }
            a[mi][j][0] = lo;
            a[mi][j][2] = hi;
            e4m3x4_raw(v1[j], lo, hi);
            lo = bf2_fma(lo, BF2_2P120, BF2_NEG0);
            hi = bf2_fma(hi, BF2_2P120, BF2_NEG0);
            if (WT == SK_MX) {
              lo = bf2_fma(lo, m1, BF2_NEG0);
              hi = bf2_fma(hi, m1, BF2_NEG0);
            }
            a[mi][j][1] = lo;
            a[mi][j][3] = hi;
          }
        }
      }
#pragma unroll
      for (int f = 0; f < NF; f++) {
        const int r = f * 8 + g;
        const unsigned char* xr = st + A_BYTES + r * XB;
        unsigned xw[2 * STEPS];
        const uint4 p = lds128(xr + (WB == 1 ? ((8 * ch + 2 * t) ^ (r & 1))
                                             : ((4 * ch + t) ^ ((r & 1) << 2))) * 16);
        xw[0] = p.x;
        xw[1] = p.y;
        xw[2] = p.z;
        xw[3] = p.w;
        if constexpr (WB == 1) {
          const uint4 q = lds128(xr + ((8 * ch + 2 * t + 1) ^ (r & 1)) * 16);
          xw[4] = q.x;
          xw[5] = q.y;
          xw[6] = q.z;
          xw[7] = q.w;
        }
#pragma unroll
        for (int j = 0; j < STEPS; j++)
#pragma unroll
          for (int mi = 0; mi < NM; mi++) {
            if constexpr (H8)
              mma_f16(dst[mi][f], a[mi][j], xw[2 * j], xw[2 * j + 1]);
            else
              mma16816(dst[mi][f], a[mi][j], xw[2 * j], xw[2 * j + 1]);
          }
      }
    }
    if constexpr (WT == SK_BLK) {
#pragma unroll
      for (int mi = 0; mi < NM; mi++) {
        const float s0 = sc[mi][0], s1 = sc[mi][1];
#pragma unroll
        for (int f = 0; f < NF; f++)
#pragma unroll
          for (int q = 0; q < 4; q++) acc[mi][f][q] += (q < 2 ? s0 : s1) * part_[mi][f][q];
      }
    }
    if constexpr (XSC) {
      // The weight rows' block scales times the token rows' x scales (C columns 2t, 2t+1).
      const float* xs = reinterpret_cast<const float*>(st + XS_AT);
#pragma unroll
      for (int f = 0; f < NF; f++) {
        const float2 x2 = *reinterpret_cast<const float2*>(xs + f * 8 + 2 * t);
#pragma unroll
        for (int mi = 0; mi < NM; mi++)
#pragma unroll
          for (int q = 0; q < 4; q++)
            acc[mi][f][q] += sc[mi][q >> 1] * (q & 1 ? x2.y : x2.x) * part_[mi][f][q];
      }
    }
  }
  cp_wait<0>();

  // Epilogue: C fragment rows = weight rows (slots), columns = token rows.
  const bool split = MODE == SK_PLAIN && nsplit > 1;
#pragma unroll
  for (int f = 0; f < NF; f++) {
#pragma unroll
    for (int q = 0; q < 4; q++) {
      const int row = r0 + f * 8 + t * 2 + (q & 1);
#pragma unroll
      for (int mi = 0; mi < (GU ? 1 : NM); mi++) {
        const int n = slotN(slotA[mi] + (q >> 1) * 8);
        if (n >= Nvalid || row >= rEnd) continue;
        const long long o = (long long)row * Nvalid + n;
        const float v = acc[mi][f][q];
        if (GU)
          reinterpret_cast<bf16_t*>(outp)[o] = f2bf(swiglu_oai(v, acc[1][f][q], alpha, limit));
        else if (MODE == SK_DOWN)
          reinterpret_cast<float*>(outp)[o] = v * rw[perm[row]];
        else if (split)
          part[(long long)z * M * Nvalid + o] = v;
        else if (outF32)
          reinterpret_cast<float*>(outp)[o] = v;
        else
          reinterpret_cast<bf16_t*>(outp)[o] = f2bf(v);
      }
    }
  }
  if (!split) return;
  __threadfence();
  __syncthreads();
  int* counter = counters + blockIdx.y * gridDim.x + blockIdx.x;
  if (tid == 0) isLast = atomicAdd(counter, 1) == nsplit - 1;
  __syncthreads();
  if (!isLast) return;
  __threadfence();
  for (int i = tid; i < (rEnd - r0) * SLOTS; i += 128) {
    const int row = r0 + i / SLOTS, n = n0 + i % SLOTS;
    if (n >= Nvalid) continue;
    const long long o = (long long)row * Nvalid + n;
    // Eight L2 reads in flight before their sums (in split order: deterministic).
    const float* pp = part + o;
    const long long step = (long long)M * Nvalid;
    float v = 0.f;
    int p = 0;
    for (; p + 8 <= nsplit; p += 8) {
      float r[8];
#pragma unroll
      for (int j = 0; j < 8; j++) r[j] = ld_cg(pp + (p + j) * step);
#pragma unroll
      for (int j = 0; j < 8; j++) v += r[j];
    }
    for (; p < nsplit; p++) v += ld_cg(pp + p * step);
    if (outF32)
      reinterpret_cast<float*>(outp)[o] = v;
    else
      reinterpret_cast<bf16_t*>(outp)[o] = f2bf(v);
  }
  if (tid == 0) *counter = 0;
}

// Every variant takes xs (Q8: the x scales of skinny_split_x; the others ignore it).
#define SK_DENSE(WN, WTV, O, OF, NF)                                                          \
  extern "C" __global__ void __launch_bounds__(128) skinny_##WN##_##O##_##NF(                 \
      const unsigned char* W, const void* S, int G, const bf16_t* x, const float* xs, int M,  \
      int N, int K, void* out, float* part, int* counters) {                                  \
    skinny<WTV, NF, SK_PLAIN>(W, S, G, x, xs, nullptr, 1, nullptr, nullptr, nullptr, nullptr, \
                              M, K, N, N, 0, out, OF, part, counters, nullptr, 0.f, 0.f);     \
  }
#define SK_DENSE_NF(WN, WTV, O, OF) \
  SK_DENSE(WN, WTV, O, OF, 1) SK_DENSE(WN, WTV, O, OF, 2) SK_DENSE(WN, WTV, O, OF, 4) \
  SK_DENSE(WN, WTV, O, OF, 8)
SK_DENSE_NF(b, SK_BF16, b, false)
SK_DENSE_NF(b, SK_BF16, f, true)
SK_DENSE_NF(blk, SK_BLK, b, false)
SK_DENSE_NF(blk, SK_BLK, f, true)
SK_DENSE_NF(mx, SK_MX, b, false)
SK_DENSE_NF(mx, SK_MX, f, true)
SK_DENSE_NF(q8, SK_Q8, b, false)
SK_DENSE_NF(q8, SK_Q8, f, true)
SK_DENSE_NF(h8, SK_H8, b, false)
SK_DENSE_NF(h8, SK_H8, f, true)

#define SK_MOE(F, WTV, BT)                                                                     \
  extern "C" __global__ void __launch_bounds__(128) skinny_gu_##F##_##BT(                      \
      const unsigned char* W, const void* S, int G, const bf16_t* x, const float* xs,          \
      const int* perm, int Kw, const int* offsets, const int* tileExpert, const int* tileStart, \
      const int* numTiles, int D, int I, bf16_t* act, float alpha, float limit) {              \
    skinny<WTV, BT / 8, SK_GU>(W, S, G, x, xs, perm, Kw, offsets, tileExpert, tileStart,       \
                               numTiles, 0, D, I, 2 * I, I, act, false, nullptr, nullptr,      \
                               nullptr, alpha, limit);                                         \
  }                                                                                            \
  extern "C" __global__ void __launch_bounds__(128) skinny_down_##F##_##BT(                    \
      const unsigned char* W, const void* S, int G, const bf16_t* act, const float* xs,        \
      const int* perm, int Kw, const int* offsets, const int* tileExpert, const int* tileStart, \
      const int* numTiles, int I, int D, float* y, const float* rw) {                          \
    skinny<WTV, BT / 8, SK_DOWN>(W, S, G, act, xs, perm, Kw, offsets, tileExpert, tileStart,   \
                                 numTiles, 0, I, D, D, 0, y, true, nullptr, nullptr, rw, 0.f,  \
                                 0.f);                                                         \
  }
SK_MOE(b, SK_BF16, 16)
SK_MOE(b, SK_BF16, 32)
SK_MOE(b, SK_BF16, 64)
SK_MOE(blk, SK_BLK, 16)
SK_MOE(blk, SK_BLK, 32)
SK_MOE(blk, SK_BLK, 64)
SK_MOE(mx, SK_MX, 16)
SK_MOE(mx, SK_MX, 32)
SK_MOE(mx, SK_MX, 64)
SK_MOE(q8, SK_Q8, 16)
SK_MOE(q8, SK_Q8, 32)
SK_MOE(q8, SK_Q8, 64)
SK_MOE(h8, SK_H8, 16)
SK_MOE(h8, SK_H8, 32)
SK_MOE(h8, SK_H8, 64)
