// Causal GQA prefill attention on tensor cores (flash attention 2 style), bf16 in / bf16 out,
// dense only, over the paged KV cache: mma.sync m16n8k16 bf16 with f32 accumulation and an f32
// online softmax; P is rounded to bf16 for the P.V product.
//   q [T, H*Dh], caches [P*S, Hkv*Dh], out [T, H*Dh]; token t of sequence seqOfToken[t] at
//   position positions[t] attends keys 0..positions[t] of its sequence (page table row), so a
//   chunk of a chunked prefill sees every cached key of its sequence.
// Launch: grid (ceil(T/(64*FA_MW)), H/FA_HB), block 128*FA_HB, dynamic smem
//   (2*2*64 + (FA_MW-1)*FA_HB*128) * (Dh+8) * 2 bytes.
// A block takes BM = 64*FA_MW consecutive tokens of the batch for FA_HB query heads of one KV
// group (H/Hkv a multiple of FA_HB), so each K/V tile in shared memory serves FA_HB heads; warp
// w owns rows 16*FA_MW*(w%4).. (FA_MW m16 tiles) of head blockIdx.y*FA_HB + w/4. Q fragments
// stay in registers (FA_MW 1) or are read from a shared Q tile by ldmatrix (FA_MW 2: each K/V
// fragment then feeds two MMAs). Blocks run the longest tiles (last tokens) first.
// A tile may span sequences: it runs once per run of rows of one sequence (other rows masked),
// over that run's keys in tiles of 64, double-buffered with cp.async (one barrier per tile: the
// next tile's copies are issued after it); K and V stay row-major in shared memory, their B
// fragments come from ldmatrix (V transposed). Tiles wholly below the causal diagonal skip the
// mask. Dh = FA_DH (a multiple of 16, at most 128); FA_HB, FA_MW 1 or 2.
// FA_SPARSE = 1 (-DFA_SPARSE, MSA layers): blocks [Hkv, T, topk] hold each token's selected
// blocks of S keys (b < 0: none); a token attends keys <= its position in those blocks only,
// as attention-decode.cu does. Per run, the rows' selections become bitmaps in shared memory
// ([BM][nbw] words and their union [nbw], after the Q tiles); the run walks only the key tiles
// of the union, each row masking the keys of blocks it did not select, and warps or m tiles
// none of whose rows selected a tile skip it.
// KV_FP8 = 1 (-DKV_FP8): the caches hold E4M3 codes (--kv-cache-dtype fp8), widened exactly to
// bf16 as they are loaded (synchronous loads: cp.async cannot convert); the key scale is in
// `scale` (the launcher passes scale * k_scale), the value scale multiplies the output (vScale,
// 1 for bf16 caches).
// Tested by test/gpu/prefill-attention-check.ts against the CPU backend and the scalar kernel.
#include "common.cuh"
#include "mma.cuh"
#include "fp8.cuh"

#ifndef FA_DH
#define FA_DH 128
#endif
#ifndef FA_HB
#define FA_HB 2
#endif
#ifndef FA_MW
#define FA_MW 1
#endif
#ifndef KV_FP8
#define KV_FP8 0
#endif
#ifndef FA_SPARSE
#define FA_SPARSE 0
#endif
#if KV_FP8
typedef e4m3_t kv_t;
#else
typedef bf16_t kv_t;
#endif

namespace {
constexpr int MW = FA_MW;        // m16 tiles per warp
constexpr int BM = 64 * MW;      // query rows per block
constexpr int BN = 64;           // keys per tile
constexpr int KP = FA_DH + 8;    // Q/K/V row pitch (bf16): 16-byte skew, conflict-free ldmatrix
constexpr int TILE = BN * KP;    // one K or V tile (bf16 elements)
constexpr int THREADS = 128 * FA_HB;
constexpr int DH = FA_DH, NT = DH / 8, KT = DH / 16;
constexpr float LOG2E = 1.4426950408889634f;

/**
 * Copies keys kt..kt+63 of one page-table row into K and V tiles (zero past hi). kt is a
 * multiple of BN; where S is too (every real page size), the tile lies in one page, so its page
 * and row base are looked up once per tile instead of once per 16-byte chunk (a division by
 * the runtime S and a page-table load each: about a fifth of a thread's instructions per tile).
 */
__device__ __forceinline__ void load_tile(bf16_t* ks, bf16_t* vs, const kv_t* kc,
                                          const kv_t* vc, const int* pt, int kt, int hi, int S,
                                          int W, int col) {
  constexpr int VPR = DH / 8;
  if (S % BN == 0) {
    const long long base = ((long long)pt[kt / S] * S + kt % S) * W + col;
#pragma unroll
    for (int i = threadIdx.x; i < BN * VPR; i += THREADS) {
      const int j = i / VPR, v = i - j * VPR;
      const bool ok = kt + j < hi;
      const long long off = ok ? base + (long long)j * W + v * 8 : 0;
#if KV_FP8
      const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
      *reinterpret_cast<uint4*>(ks + j * KP + v * 8) = ok ? ld8_bf16(kc + off) : zero;
      *reinterpret_cast<uint4*>(vs + j * KP + v * 8) = ok ? ld8_bf16(vc + off) : zero;
#else
      cp_async16(ks + j * KP + v * 8, kc + off, ok);
      cp_async16(vs + j * KP + v * 8, vc + off, ok);
#endif
    }
    return;
  }
#pragma unroll
  for (int i = threadIdx.x; i < BN * VPR; i += THREADS) {
    const int j = i / VPR, v = i - j * VPR, key = kt + j;
    const bool ok = key < hi;
    const long long off = ok ? ((long long)pt[key / S] * S + key % S) * W + col + v * 8 : 0;
#if KV_FP8
    const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
    *reinterpret_cast<uint4*>(ks + j * KP + v * 8) = ok ? ld8_bf16(kc + off) : zero;
    *reinterpret_cast<uint4*>(vs + j * KP + v * 8) = ok ? ld8_bf16(vc + off) : zero;
#else
    cp_async16(ks + j * KP + v * 8, kc + off, ok);
    cp_async16(vs + j * KP + v * 8, vc + off, ok);
#endif
  }
}

/**
 * 2^x by one MUFU.EX2 (ex2.approx.ftz): exp2f adds a range test and two multiplies per call to
 * keep results below 2^-126 subnormal; a probability that small is 0 to the softmax anyway.
 */
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/**
 * Folds one m16 tile's raw scores s (16 rows x 64 keys from kt; rows at positions p0 / p1, -1
 * for rows outside the run) into the online softmax (m, l, o), masking keys past a row's
 * position unless `whole`: s becomes the probabilities, o is rescaled where a row's maximum
 * grew. m is kept in base-2 units (scores times sl2); l is this thread's partial row sum (its
 * 16 columns of each tile), summed over the quad once at the end, since every factor applied
 * to it is uniform over the quad.
 * Instruction diet (v3): the scale is folded into the exponent's FFMA, the mask is one compare
 * per element and only on tiles that need it, and the rescale of o (2 x NT x 2 FMULs) is
 * skipped when no row of the warp has a new maximum (most tiles past the first few).
 */
__device__ __forceinline__ void softmax_tile(float (&s)[BN / 8][4], float (&o)[NT][4], float* m,
                                             float* l, int kt, int p0, int p1, bool whole,
                                             float sl2, int qc) {
  if (!whole) {
    // key = kt + qc + n * 8 + (e & 1) is visible iff n * 8 + (e & 1) <= p - kt - qc.
    const int d0 = p0 - kt - qc, d1 = p1 - kt - qc;
#pragma unroll
    for (int n = 0; n < BN / 8; n++)
#pragma unroll
      for (int e = 0; e < 4; e++)
        if (n * 8 + (e & 1) > (e < 2 ? d0 : d1)) s[n][e] = -INFINITY;
  }
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int n = 0; n < BN / 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) mx[e >> 1] = fmaxf(mx[e >> 1], s[n][e]);
  float corr[2], msafe[2];
#pragma unroll
  for (int r = 0; r < 2; r++) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    // sl2 > 0 and rounding is monotonic, so max(s) * sl2 is max(s * sl2).
    const float mn = fmaxf(m[r], mx[r] * sl2);
    msafe[r] = mn == -INFINITY ? 0.f : mn;
    // A row that has seen no key yet has o = 0 and l = 0: any finite factor will do.
    corr[r] = m[r] == -INFINITY ? 1.f : ex2(m[r] - msafe[r]);
    m[r] = mn;
    l[r] *= corr[r];
  }
#pragma unroll
  for (int n = 0; n < BN / 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const float p = ex2(fmaf(s[n][e], sl2, -msafe[e >> 1]));  // -inf -> 0
      s[n][e] = p;
      l[e >> 1] += p;
    }
  if (__any_sync(0xffffffffu, corr[0] != 1.f || corr[1] != 1.f)) {
#pragma unroll
    for (int n = 0; n < NT; n++) {
      o[n][0] *= corr[0]; o[n][1] *= corr[0];
      o[n][2] *= corr[1]; o[n][3] *= corr[1];
    }
  }
}

/** The first key tile from kt on (multiples of BN below hi) holding a block set in ub, or hi. */
__device__ __forceinline__ int next_tile(const unsigned* ub, int kt, int hi, int S) {
  for (; kt < hi; kt += BN) {
    const int last = (min(kt + BN, hi) - 1) / S;
    for (int bb = kt / S; bb <= last; bb++)
      if ((ub[bb >> 5] >> (bb & 31)) & 1u) return kt;
  }
  return hi;
}

/** Bit j set iff key kt + j (below hi) lies in a block set in the row's bitmap rb. */
__device__ __forceinline__ unsigned long long row_sel(const unsigned* rb, int kt, int hi, int S) {
  const int last = (min(kt + BN, hi) - 1) / S;
  unsigned long long m = 0ull;
  for (int bb = kt / S; bb <= last; bb++)
    if ((rb[bb >> 5] >> (bb & 31)) & 1u) {
      const int lo = max(bb * S, kt) - kt, up = min(bb * S + S, kt + BN) - kt;
      m |= (up - lo >= 64 ? ~0ull : ((1ull << (up - lo)) - 1ull)) << lo;
    }
  return m;
}
}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS) attention_prefill(
    bf16_t* out, const bf16_t* q, const kv_t* kc, const kv_t* vc, const int* positions,
    const int* seqOfToken, const int* pageTable, int pageStride, int T, int H, int Hkv, int S,
    float scale, float vScale, const int* blocks, int topk, int nbw) {
  extern __shared__ __align__(16) unsigned char smraw[];
  bf16_t* sk = reinterpret_cast<bf16_t*>(smraw);  // 2 stages x ([BN][KP] K, [BN][KP] V)
  __shared__ int rowPos[BM], rowSeq[BM];
  const int t0 = (gridDim.x - 1 - blockIdx.x) * BM;  // last (longest) tiles first
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int h = blockIdx.y * FA_HB + warp / 4, g = h / (H / Hkv);
  const int W = Hkv * DH;
  const int qr = lane >> 2, qc = (lane & 3) * 2;  // fragment row / column pair
  const int wr = (warp & 3) * 16 * MW;             // this warp's first row in the block
  const int nrows = min(BM, T - t0);
  for (int i = tid; i < BM; i += THREADS) {
    rowPos[i] = i < nrows ? positions[t0 + i] : -1;
    rowSeq[i] = i < nrows ? seqOfToken[t0 + i] : -1;
  }
#if FA_MW == 1
  // Q fragments of this warp's 16 rows in registers (rows past T are zero and never stored).
  unsigned qa[KT][4];
  {
    const int r0 = wr + qr, r1 = r0 + 8;
    const bf16_t* q0 = q + (long long)(t0 + r0) * H * DH + (long long)h * DH;
    const bf16_t* q1 = q + (long long)(t0 + r1) * H * DH + (long long)h * DH;
#pragma unroll
    for (int kk = 0; kk < KT; kk++) {
      const int c = kk * 16 + qc;
      qa[kk][0] = r0 < nrows ? ld32(q0 + c) : 0u;
      qa[kk][1] = r1 < nrows ? ld32(q1 + c) : 0u;
      qa[kk][2] = r0 < nrows ? ld32(q0 + c + 8) : 0u;
      qa[kk][3] = r1 < nrows ? ld32(q1 + c + 8) : 0u;
    }
  }
#else
  // The Q tile of each head [BM][KP] after the K/V stages; A fragments by ldmatrix.
  bf16_t* sq = sk + 4 * TILE + (warp / 4) * BM * KP;
  {
    const int lt = tid & 127;  // this head's 4 warps copy its rows
    for (int i = lt; i < BM * (DH / 8); i += 128) {
      const int r = i / (DH / 8), v = i - r * (DH / 8);
      const bool ok = r < nrows;
      cp_async16(sq + r * KP + v * 8,
                 q + (ok ? (long long)(t0 + r) * H * DH + (long long)h * DH + v * 8 : 0), ok);
    }
    cp_commit();
  }
  const int qOff = (wr + (lane & 15)) * KP + (lane >> 4) * 8;
#endif
  float o[MW][NT][4];
#pragma unroll
  for (int mi = 0; mi < MW; mi++)
#pragma unroll
    for (int n = 0; n < NT; n++) o[mi][n][0] = o[mi][n][1] = o[mi][n][2] = o[mi][n][3] = 0.f;
  float m[MW][2], l[MW][2];
#pragma unroll
  for (int mi = 0; mi < MW; mi++) m[mi][0] = m[mi][1] = -INFINITY, l[mi][0] = l[mi][1] = 0.f;
  const float sl2 = scale * LOG2E;
  // ldmatrix lane addresses: K (non-transposed) x4 = keys n*8+(lane&7), dims +8*(lane>>3);
  // V (transposed) x4 = keys +(lane&15), dims +8*(lane>>4).
  const int kOff = (lane & 7) * KP + (lane >> 3) * 8;
  // K x4 over two key groups of 8 (FA_MW 2): lanes 0-15 keys +(lane&7), dims +8*(lane>>3&1);
  // lanes 16-31 the same for the next 8 keys.
  const int kOff2 = ((lane & 7) + (lane >> 4) * 8) * KP + ((lane >> 3) & 1) * 8;
  const int vOff = (lane & 15) * KP + (lane >> 4) * 8;
#if FA_SPARSE
  // Row bitmaps [BM][nbw] of each row's selected blocks, then their union [nbw], after the
  // K/V stages and Q tiles.
  unsigned* rowBits = reinterpret_cast<unsigned*>(sk + 4 * TILE + (MW - 1) * FA_HB * BM * KP);
  unsigned* unionBits = rowBits + BM * nbw;
#else
  (void)blocks, (void)topk, (void)nbw;
#endif
  __syncthreads();

  // Runs of rows of one sequence: [a, b).
  for (int a = 0; a < nrows;) {
    const int seq = rowSeq[a];
    int b = a + 1, hi = rowPos[a] + 1;
    while (b < nrows && rowSeq[b] == seq) hi = max(hi, rowPos[b] + 1), b++;
    // This thread's rows take part in the run iff a <= row < b; an m tile skips key tiles past
    // its rows' last position, and the mask for tiles all of its rows see whole.
    int p0[MW], p1[MW], tmax[MW], tmin[MW], wmax = -1;
#pragma unroll
    for (int mi = 0; mi < MW; mi++) {
      const int r0 = wr + mi * 16 + qr, r1 = r0 + 8;
      p0[mi] = (r0 >= a && r0 < b) ? rowPos[r0] : -1;
      p1[mi] = (r1 >= a && r1 < b) ? rowPos[r1] : -1;
      tmax[mi] = max(p0[mi], p1[mi]);
      tmin[mi] = min(p0[mi], p1[mi]);
#pragma unroll
      for (int o2 = 16; o2 > 0; o2 >>= 1) {
        tmax[mi] = max(tmax[mi], __shfl_xor_sync(0xffffffffu, tmax[mi], o2));
        tmin[mi] = min(tmin[mi], __shfl_xor_sync(0xffffffffu, tmin[mi], o2));
      }
      wmax = max(wmax, tmax[mi]);
    }
    const int* pt = pageTable + (long long)seq * pageStride;
    const int col = g * DH;
    __syncthreads();  // the previous run's readers of stage 0 (and of the bitmaps) are done
#if FA_SPARSE
    // The run's selections as bitmaps: blocks b < 0 (absent) and past a row's position skipped,
    // as the decode kernel skips them.
    for (int i = tid; i < (BM + 1) * nbw; i += THREADS) rowBits[i] = 0u;
    __syncthreads();
    for (int i = tid; i < (b - a) * topk; i += THREADS) {
      const int r = a + i / topk;
      const int blk = blocks[((long long)g * T + t0 + r) * topk + i % topk];
      if (blk < 0 || blk >= 32 * nbw || (long long)blk * S > rowPos[r]) continue;
      atomicOr(rowBits + r * nbw + (blk >> 5), 1u << (blk & 31));
      atomicOr(unionBits + (blk >> 5), 1u << (blk & 31));
    }
    __syncthreads();
    int kt = next_tile(unionBits, 0, hi, S);
#else
    int kt = 0;
#endif
    if (kt < hi) load_tile(sk, sk + TILE, kc, vc, pt, kt, hi, S, W, col);
    cp_commit();
    for (int st = 0; kt < hi; st ^= 1) {
#if FA_SPARSE
      const int nk = next_tile(unionBits, kt + BN, hi, S);
#else
      const int nk = kt + BN;
#endif
      // One barrier per tile: past it, tile kt has landed for every thread's copies, and every
      // warp has finished reading the other stage (tile kt - BN), which the prefetch refills.
      cp_wait<0>();
      __syncthreads();
      if (nk < hi)
        load_tile(sk + (st ^ 1) * 2 * TILE, sk + (st ^ 1) * 2 * TILE + TILE, kc, vc, pt, nk, hi,
                  S, W, col);
      cp_commit();
      const bf16_t* ks = sk + st * 2 * TILE;
      const bf16_t* vs = ks + TILE;
#if FA_SPARSE
      // This tile's positions per row: -1 where the row selected none of its blocks; sel* the
      // key bits where blocks are shorter than a tile. Warps and m tiles skip by vote.
      int e0[MW], e1[MW];
      unsigned long long sel0[MW], sel1[MW];
      bool seen[MW], any = false;
#pragma unroll
      for (int mi = 0; mi < MW; mi++) {
        const int r0 = wr + mi * 16 + qr;
        sel0[mi] = row_sel(rowBits + r0 * nbw, kt, hi, S);
        sel1[mi] = row_sel(rowBits + (r0 + 8) * nbw, kt, hi, S);
        e0[mi] = sel0[mi] ? p0[mi] : -1;
        e1[mi] = sel1[mi] ? p1[mi] : -1;
        seen[mi] = __any_sync(0xffffffffu, e0[mi] >= kt || e1[mi] >= kt);
        any = any || seen[mi];
      }
      if (any) {
#else
      if (kt <= wmax) {  // else no row of this warp sees these keys (uniform per warp)
#endif
        // S = Q K^T: 16*MW rows x 64 keys per warp.
        float s[MW][BN / 8][4];
#pragma unroll
        for (int mi = 0; mi < MW; mi++)
#pragma unroll
          for (int n = 0; n < BN / 8; n++) s[mi][n][0] = s[mi][n][1] = s[mi][n][2] = s[mi][n][3] = 0.f;
#if FA_MW == 1
#pragma unroll
        for (int n = 0; n < BN / 8; n++) {
          const bf16_t* kr = ks + n * 8 * KP + kOff;
#pragma unroll
          for (int kk = 0; kk + 1 < KT; kk += 2) {
            unsigned kb[4];
            ldsm_x4(kb[0], kb[1], kb[2], kb[3], kr + kk * 16);
            mma16816(s[0][n], qa[kk], kb[0], kb[1]);
            mma16816(s[0][n], qa[kk + 1], kb[2], kb[3]);
          }
          if (KT & 1) {  // Dh an odd multiple of 16: the last 16 dims by x2
            unsigned kb[2];
            ldsm_x2(kb[0], kb[1], kr + (KT - 1) * 16);
            mma16816(s[0][n], qa[KT - 1], kb[0], kb[1]);
          }
        }
#else
#pragma unroll
        for (int kk = 0; kk < KT; kk++) {
          unsigned qf[MW][4];
#pragma unroll
          for (int mi = 0; mi < MW; mi++)
            ldsm_x4(qf[mi][0], qf[mi][1], qf[mi][2], qf[mi][3], sq + qOff + mi * 16 * KP + kk * 16);
#pragma unroll
          for (int n = 0; n < BN / 8; n += 2) {  // key groups n and n + 1 from one ldmatrix
            unsigned kb[4];
            ldsm_x4(kb[0], kb[1], kb[2], kb[3], ks + n * 8 * KP + kOff2 + kk * 16);
#pragma unroll
            for (int mi = 0; mi < MW; mi++) {
              mma16816(s[mi][n], qf[mi], kb[0], kb[1]);
              mma16816(s[mi][n + 1], qf[mi], kb[2], kb[3]);
            }
          }
        }
#endif
        // Mask where needed, then the online softmax in base 2, per m tile.
#pragma unroll
        for (int mi = 0; mi < MW; mi++) {
#if FA_SPARSE
          if (!seen[mi]) continue;
          if (S % BN != 0) {  // blocks shorter than a tile: mask keys of unselected blocks
#pragma unroll
            for (int n = 0; n < BN / 8; n++)
#pragma unroll
              for (int e = 0; e < 4; e++)
                if (!(((e < 2 ? sel0[mi] : sel1[mi]) >> (n * 8 + qc + (e & 1))) & 1ull))
                  s[mi][n][e] = -INFINITY;
          }
          softmax_tile(s[mi], o[mi], m[mi], l[mi], kt, e0[mi], e1[mi], false, sl2, qc);
#else
          if (kt <= tmax[mi])
            softmax_tile(s[mi], o[mi], m[mi], l[mi], kt, p0[mi], p1[mi], kt + BN - 1 <= tmin[mi],
                         sl2, qc);
#endif
        }
        // O += P V: P's accumulator layout is the A fragment layout (keys 16kk..16kk+15).
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++) {
          unsigned pa[MW][4];
#pragma unroll
          for (int mi = 0; mi < MW; mi++) {
            pa[mi][0] = pack2(s[mi][2 * kk][0], s[mi][2 * kk][1]);
            pa[mi][1] = pack2(s[mi][2 * kk][2], s[mi][2 * kk][3]);
            pa[mi][2] = pack2(s[mi][2 * kk + 1][0], s[mi][2 * kk + 1][1]);
            pa[mi][3] = pack2(s[mi][2 * kk + 1][2], s[mi][2 * kk + 1][3]);
          }
          const bf16_t* vr = vs + kk * 16 * KP + vOff;
#pragma unroll
          for (int n = 0; n < NT; n += 2) {
            unsigned vb[4];
            ldsm_x4_trans(vb, vr + n * 8);
#pragma unroll
            for (int mi = 0; mi < MW; mi++) {
#if FA_SPARSE
              if (!seen[mi]) continue;
#else
              if (kt > tmax[mi]) continue;  // this m tile sees none of these keys
#endif
              mma16816(o[mi][n], pa[mi], vb[0], vb[1]);
              mma16816(o[mi][n + 1], pa[mi], vb[2], vb[3]);
            }
          }
        }
      }
      kt = nk;
    }
    cp_wait<0>();
    a = b;
  }
  // Rows with no visible key (none in practice: a token sees itself) give 0, like the scalar
  // kernel.
#pragma unroll
  for (int mi = 0; mi < MW; mi++) {
    const int r0 = wr + mi * 16 + qr, r1 = r0 + 8;
#pragma unroll
    for (int r = 0; r < 2; r++) {  // the quad's partial row sums
      l[mi][r] += __shfl_xor_sync(0xffffffffu, l[mi][r], 1);
      l[mi][r] += __shfl_xor_sync(0xffffffffu, l[mi][r], 2);
    }
    const float inv0 = l[mi][0] > 0.f ? vScale / l[mi][0] : 0.f;
    const float inv1 = l[mi][1] > 0.f ? vScale / l[mi][1] : 0.f;
    bf16_t* o0 = out + (long long)(t0 + r0) * H * DH + (long long)h * DH + qc;
    bf16_t* o1 = out + (long long)(t0 + r1) * H * DH + (long long)h * DH + qc;
#pragma unroll
    for (int n = 0; n < NT; n++) {
      if (r0 < nrows)
        *reinterpret_cast<unsigned*>(o0 + n * 8) = pack2(o[mi][n][0] * inv0, o[mi][n][1] * inv0);
      if (r1 < nrows)
        *reinterpret_cast<unsigned*>(o1 + n * 8) = pack2(o[mi][n][2] * inv1, o[mi][n][3] * inv1);
    }
  }
}
