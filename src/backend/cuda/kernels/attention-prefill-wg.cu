// Causal GQA prefill attention on Hopper's warpgroup MMA (wgmma.mma_async, sm_90a only),
// bf16 in / bf16 out, dense, over a bf16 paged KV cache; the same contract and arithmetic as
// attention-prefill.cu (f32 accumulation, f32 online softmax in base 2, P rounded to bf16 for
// P.V), for Dh = 128 and page sizes that are multiples of 128.
//   q [T, H*Dh], caches [P*S, Hkv*Dh], out [T, H*Dh]; token t of sequence seqOfToken[t] at
//   position positions[t] attends keys 0..positions[t] of its sequence (page table row).
// Launch: grid (H, ceil(T/128)), block 256 (two warpgroups), dynamic smem
//   128*128*2 (Q) + 3 * 2 * 128*128*2 (K and V, three stages) = 224 KiB, + FA_SPARSE *
//   (128 + 2) * nbw * 4 (bitmaps).
// A block takes 128 consecutive tokens of the batch for one query head; warpgroup w owns rows
// 64w..64w+63 (warp w*4+i rows 16i.. of those, the wgmma accumulator layout). Per run of rows
// of one sequence, keys go in tiles of 128 through three shared-memory stages filled by
// cp.async one tile ahead: S = Q K^T is 8 wgmma m64n128k16 with Q and K from shared memory,
// P.V is 8 more with P from registers (the S accumulator re-packed as A fragments) and V from
// shared memory read N-major (transposed). The P.V of a tile is waited for only after the next
// tile's S, so it overlaps the barrier and the next tile's loads; the third stage is what makes
// that safe (the stage a prefetch refills was last read two tiles ago, and every warpgroup has
// waited for those reads before the barrier it passed).
// Shared memory holds tiles as 8x8 "core matrices" (8 rows x 16 bytes, 128 contiguous bytes):
// row j's 16-byte chunk c at byte ((j/8)*16 + c)*128 + (j%8)*16, i.e. chunk index i =
// (j/8)*128 + c*8 + j%8 lies at 16*i, no swizzle. The descriptors: Q and K (K-major) leading
// byte offset 128 (next 8 dims), stride byte offset 2048 (next 8 rows); V (N-major: N = dims,
// K = keys) leading byte offset 2048 (next 8 keys), stride byte offset 128 (next 8 dims).
// FA_SPARSE = 1 (MSA layers): blocks [Hkv, T, topk] hold each token's selected blocks of S
// keys (b < 0: none), as in attention-prefill.cu's sparse form: per run, the rows' selections
// become bitmaps in shared memory ([BM][nbw] words, then one union [nbw] per warpgroup, after
// the stages); the run walks only the key tiles (each inside one block) that some row
// selected, a warpgroup skips those none of its rows selected, and each row masks the tiles
// of blocks it did not select.
// The softmax helpers repeat attention-prefill.cu's (v3) for 128-key tiles: every .cuh header
// is hashed into every kernel's cubin name, so a shared header would recompile them all.
// Tested by test/gpu/prefill-attention-check.ts against the CPU backend and the mma.sync kernel.
#include "common.cuh"
#include "mma.cuh"

namespace {
constexpr int DH = 128;
constexpr int BM = 128;  // query rows per block (two warpgroups of 64)
constexpr int BN = 128;  // keys per tile
constexpr int THREADS = 256;
constexpr int STAGES = 3;
constexpr int NT = DH / 8;                  // n8 column groups of O (16)
constexpr int CHUNKS = DH / 8;              // 16-byte chunks per row
constexpr int Q_BYTES = BM * DH * 2;        // 32 KiB
constexpr int TILE_BYTES = BN * DH * 2;     // one K or V tile, 32 KiB
constexpr float LOG2E = 1.4426950408889634f;
#ifndef FA_SPARSE
#define FA_SPARSE 0
#endif
#ifndef FA_WS
#define FA_WS 0
#endif
// FA_WS 1: a ninth warp loads the K/V tiles and mbarriers hand stages between it and the
// consumers, so the two warpgroups need not meet at a block barrier every tile.
constexpr int ALL_THREADS = THREADS + (FA_WS ? 32 : 0);
// V's descriptor strides (PTX ISA, canonical MN-major layout without swizzle: SBO steps along
// N, LBO along K). The other reading (LBO along N) would step 16 x 2 KiB along the dims and
// read past the last stage's V tile: session 8 W1's memcheck caught that form (FA_VSWAP, since
// removed) out of range of shared memory, while this one ran clean.
constexpr unsigned V_LBO = 2048, V_SBO = 128;

/** Shared-memory matrix descriptor, no swizzle (layout type 0); byte offsets in 16 B units. */
__device__ __forceinline__ unsigned long long sdesc(const void* p, unsigned lbo, unsigned sbo) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(p);
  return (unsigned long long)((a >> 4) & 0x3FFFu) |
         ((unsigned long long)((lbo >> 4) & 0x3FFFu) << 16) |
         ((unsigned long long)((sbo >> 4) & 0x3FFFu) << 32);
}

#define WG_ACC4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define WG_ACC64                                                                               \
  WG_ACC4(0), WG_ACC4(4), WG_ACC4(8), WG_ACC4(12), WG_ACC4(16), WG_ACC4(20), WG_ACC4(24),      \
      WG_ACC4(28), WG_ACC4(32), WG_ACC4(36), WG_ACC4(40), WG_ACC4(44), WG_ACC4(48),            \
      WG_ACC4(52), WG_ACC4(56), WG_ACC4(60)
#define WG_REGS64                                                                              \
  "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,"  \
  "%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45," \
  "%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}"

/** d (+)= A B, m64n128k16, A and B from shared memory, both K-major; d = A B when !accum. */
__device__ __forceinline__ void wgmma_ss(float* d, unsigned long long da, unsigned long long db,
                                         int accum) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " WG_REGS64
      ", %64, %65, p, 1, 1, 0, 0;\n}\n"
      : WG_ACC64
      : "l"(da), "l"(db), "r"(accum));
}

/** d += A B, m64n128k16, A (4 registers, the mma A fragment layout) and B N-major in smem. */
__device__ __forceinline__ void wgmma_rs(float* d, const unsigned* a, unsigned long long db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " WG_REGS64
      ", {%64,%65,%66,%67}, %68, p, 1, 1, 1;\n}\n"
      : WG_ACC64
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_wait0() {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
/** Keeps the compiler from moving accesses of d across the asynchronous MMAs around it. */
__device__ __forceinline__ void fence_regs(float* d) {
#pragma unroll
  for (int i = 0; i < 64; i++) asm volatile("" : "+f"(d[i])::"memory");
}
/** Makes this thread's cp.async writes to shared memory visible to wgmma (the async proxy). */
__device__ __forceinline__ void fence_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/**
 * Keys kt..kt+127 of one page-table row (S a multiple of 128: one page) into K and V tiles,
 * by NT loading threads of which this is thread t.
 */
template <int NT_>
__device__ __forceinline__ void load_tile(unsigned char* ks, unsigned char* vs, const bf16_t* kc,
                                          const bf16_t* vc, const int* pt, int kt, int hi,
                                          int S, int W, int col, int t) {
  const long long base = ((long long)pt[kt / S] * S + kt % S) * W + col;
#pragma unroll
  for (int i0 = 0; i0 < BN * CHUNKS; i0 += NT_) {
    const int i = i0 + t;
    const int j = (i >> 7) * 8 + (i & 7), c = (i >> 3) & (CHUNKS - 1);
    const bool ok = kt + j < hi;
    const long long off = ok ? base + (long long)j * W + c * 8 : 0;
    cp_async16(ks + i * 16, kc + off, ok);
    cp_async16(vs + i * 16, vc + off, ok);
  }
}

#if FA_WS
__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbar_init(unsigned long long* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(b)) : "memory");
}
/** Waits until phase `parity` of the barrier has completed. */
__device__ __forceinline__ void mbar_wait(unsigned long long* b, unsigned parity) {
  asm volatile(
      "{\n.reg .pred p;\nWAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT;\n}\n" ::"r"(smem_u32(b)),
      "r"(parity)
      : "memory");
}
#endif

/** Two floats rounded to bf16 (nearest even, as pack2) by one cvt: lo in the low half. */
__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/** As fence_regs, for the P fragments an in-flight P.V reads. */
__device__ __forceinline__ void fence_frags(unsigned (&pa)[BN / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; kk++)
#pragma unroll
    for (int i = 0; i < 4; i++) asm volatile("" : "+r"(pa[kk][i])::"memory");
}

#if FA_SPARSE
/** The first key tile from kt on (multiples of BN below hi) whose block is set in u0 or u1, or hi. */
__device__ __forceinline__ int next_tile(const unsigned* u0, const unsigned* u1, int kt, int hi,
                                         int S) {
  for (; kt < hi; kt += BN) {
    const int bb = kt / S;
    if (((u0[bb >> 5] | u1[bb >> 5]) >> (bb & 31)) & 1u) return kt;
  }
  return hi;
}
#endif

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/** attention-prefill.cu's softmax_tile for one m16 slice of the accumulator and 128 keys. */
__device__ __forceinline__ void softmax_tile(float (&s)[BN / 8][4], float (&o)[NT][4], float* m,
                                             float* l, int kt, int p0, int p1, bool whole,
                                             float sl2, int qc) {
  if (!whole) {
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
    const float mn = fmaxf(m[r], mx[r] * sl2);
    msafe[r] = mn == -INFINITY ? 0.f : mn;
    corr[r] = m[r] == -INFINITY ? 1.f : ex2(m[r] - msafe[r]);
    m[r] = mn;
    l[r] *= corr[r];
  }
#pragma unroll
  for (int n = 0; n < BN / 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const float p = ex2(fmaf(s[n][e], sl2, -msafe[e >> 1]));
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
}  // namespace

extern "C" __global__ void __launch_bounds__(ALL_THREADS, 1) attention_prefill_wg(
    bf16_t* out, const bf16_t* q, const bf16_t* kc, const bf16_t* vc, const int* positions,
    const int* seqOfToken, const int* pageTable, int pageStride, int T, int H, int Hkv, int S,
    float scale, float vScale, const int* blocks, int topk, int nbw) {
  extern __shared__ __align__(128) unsigned char smraw[];
  unsigned char* sq = smraw;            // [BM] Q rows, core-matrix layout
  unsigned char* sk = smraw + Q_BYTES;  // STAGES x (K tile, V tile)
  __shared__ int rowPos[BM], rowSeq[BM];
  // Heads vary fastest and the last (longest) row tiles come first: the GPU starts every head's
  // longest tile before any shorter one, and the blocks running together share K/V in L2.
  const int t0 = (gridDim.y - 1 - blockIdx.y) * BM;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2;
  const int h = blockIdx.x, g = h / (H / Hkv);
  const int W = Hkv * DH;
  const int qr = lane >> 2, qc = (lane & 3) * 2;
  const int wr = wg * 64 + (warp & 3) * 16;  // this warp's first row in the block
  const int nrows = min(BM, T - t0);
  for (int i = tid; i < BM; i += ALL_THREADS) {
    rowPos[i] = i < nrows ? positions[t0 + i] : -1;
    rowSeq[i] = i < nrows ? seqOfToken[t0 + i] : -1;
  }
  for (int i = tid; i < BM * CHUNKS; i += ALL_THREADS) {
    const int r = (i >> 7) * 8 + (i & 7), c = (i >> 3) & (CHUNKS - 1);
    const bool ok = r < nrows;
    cp_async16(sq + i * 16, q + (ok ? (long long)(t0 + r) * H * DH + (long long)h * DH + c * 8 : 0),
               ok);
  }
  cp_commit();
  cp_wait<0>();
  fence_async_smem();  // Q, read by wgmma, is complete before the barrier below
  float o[NT][4];
#pragma unroll
  for (int n = 0; n < NT; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  // P fragments of the last tile: live until the wait after the next tile's S (the P.V that
  // reads them runs until then), so declared here and fenced at each wait.
  unsigned pa[BN / 16][4] = {};
  // S accumulators, declared once: the first MMA of a tile overwrites them (scale-d 0), but the
  // asm reads them, so they must hold defined values.
  float s[BN / 8][4] = {};
  float* sf = &s[0][0];
  const float sl2 = scale * LOG2E;
  const unsigned char* qw = sq + wg * (64 / 8) * 2048;  // this warpgroup's 64 Q rows
#if FA_SPARSE
  // Row bitmaps [BM][nbw], then each warpgroup's union [2][nbw], after the stages.
  unsigned* rowBits = reinterpret_cast<unsigned*>(sk + STAGES * 2 * TILE_BYTES);
  unsigned* wgBits = rowBits + BM * nbw;
#else
  (void)blocks, (void)topk, (void)nbw;
#endif
#if FA_WS
  // full[s]: the loader's 32 threads arrive once their copies into stage s landed; empty[s]:
  // the 256 consumers arrive once their MMAs reading stage s are done. `it` counts tiles over
  // all runs (the same sequence on both sides): tile it uses stage it % 3 in phase it / 3.
  __shared__ __align__(8) unsigned long long bars[2 * STAGES];
  if (tid == 0)
    for (int i = 0; i < STAGES; i++) mbar_init(bars + i, 32), mbar_init(bars + STAGES + i, THREADS);
  const bool loader = warp == THREADS / 32;
  int it = 0;
#endif
  __syncthreads();

  for (int a = 0; a < nrows;) {
    const int seq = rowSeq[a];
    int b = a + 1, hi = rowPos[a] + 1;
    while (b < nrows && rowSeq[b] == seq) hi = max(hi, rowPos[b] + 1), b++;
    const int r0 = min(wr + qr, BM - 9), r1 = r0 + 8;  // (clamped for the loader warp)
    const int p0 = (r0 >= a && r0 < b) ? rowPos[r0] : -1;
    const int p1 = (r1 >= a && r1 < b) ? rowPos[r1] : -1;
    // The warpgroup's last and first position in the run (rows outside it count as -1): it
    // issues its MMAs together, so it skips a tile only when none of its rows sees it.
    int gmax = -1, gmin = 1 << 30;
    for (int r = wg * 64; r < min(wg * 64 + 64, BM); r++) {
      const int p = (r >= a && r < b) ? rowPos[r] : -1;
      gmax = max(gmax, p);
      gmin = min(gmin, p);
    }
    const int* pt = pageTable + (long long)seq * pageStride;
    const int col = g * DH;
    __syncthreads();  // the previous run's readers of the stages (and bitmaps) are done
#if FA_SPARSE
    // The run's selections as bitmaps: blocks b < 0 (absent) and past a row's position
    // skipped, as attention-prefill.cu and the decode kernel skip them.
    for (int i = tid; i < (BM + 2) * nbw; i += ALL_THREADS) rowBits[i] = 0u;
    __syncthreads();
    for (int i = tid; i < (b - a) * topk; i += ALL_THREADS) {
      const int r = a + i / topk;
      const int blk = blocks[((long long)g * T + t0 + r) * topk + i % topk];
      if (blk < 0 || blk >= 32 * nbw || (long long)blk * S > rowPos[r]) continue;
      atomicOr(rowBits + r * nbw + (blk >> 5), 1u << (blk & 31));
      atomicOr(wgBits + (r >> 6) * nbw + (blk >> 5), 1u << (blk & 31));
    }
    __syncthreads();
    const int first = next_tile(wgBits, wgBits + nbw, 0, hi, S);
#define NEXT_TILE(kt) next_tile(wgBits, wgBits + nbw, (kt) + BN, hi, S)
#else
    const int first = 0;
#define NEXT_TILE(kt) ((kt) + BN)
#endif
#if FA_WS
    if (loader) {
      // Stage it % 3 is refilled once every consumer is done with tile it - 3; the arrival on
      // full for a tile comes after the next tile's copies are issued (two in flight).
      int prev = -1;
      for (int kt = first; kt < hi; kt = NEXT_TILE(kt)) {
        const int st = it % STAGES;
        if (it >= STAGES) mbar_wait(bars + STAGES + st, (it / STAGES - 1) & 1);
        unsigned char* ks = sk + st * 2 * TILE_BYTES;
        load_tile<32>(ks, ks + TILE_BYTES, kc, vc, pt, kt, hi, S, W, col, lane);
        cp_commit();
        if (prev >= 0) {
          cp_wait<1>();
          fence_async_smem();
          mbar_arrive(bars + prev);
        }
        prev = st;
        it++;
      }
      if (prev >= 0) {
        cp_wait<0>();
        fence_async_smem();
        mbar_arrive(bars + prev);
      }
      a = b;
      continue;
    }
    int prev = -1;
#else
    if (first < hi) load_tile<THREADS>(sk, sk + TILE_BYTES, kc, vc, pt, first, hi, S, W, col, tid);
    cp_commit();
    int st = 0;
#endif
    for (int kt = first; kt < hi;) {
      const int nk = NEXT_TILE(kt);
#if FA_SPARSE
      const int bb = kt / S;
      const bool seen = kt <= gmax && ((wgBits[wg * nbw + (bb >> 5)] >> (bb & 31)) & 1u);
      // This tile's positions per row: -1 where the row did not select its block.
      const int e0 = ((rowBits[r0 * nbw + (bb >> 5)] >> (bb & 31)) & 1u) ? p0 : -1;
      const int e1 = ((rowBits[r1 * nbw + (bb >> 5)] >> (bb & 31)) & 1u) ? p1 : -1;
      const bool whole = false;
#else
      const bool seen = kt <= gmax;
      const int e0 = p0, e1 = p1;
      const bool whole = kt + BN - 1 <= gmin;
#endif
#if FA_WS
      const int st = it % STAGES;
      mbar_wait(bars + st, (it / STAGES) & 1);
#else
      cp_wait<0>();
      fence_async_smem();
      // Past it: tile kt (and Q) landed for every thread, and every warpgroup has waited for
      // its MMAs of tile kt - 2*BN, whose stage the prefetch below refills.
      __syncthreads();
      const int nx = st + 1 == STAGES ? 0 : st + 1;
      if (nk < hi)
        load_tile<THREADS>(sk + nx * 2 * TILE_BYTES, sk + nx * 2 * TILE_BYTES + TILE_BYTES, kc,
                           vc, pt, nk, hi, S, W, col, tid);
      cp_commit();
#endif
      const unsigned char* ks = sk + st * 2 * TILE_BYTES;
      const unsigned char* vs = ks + TILE_BYTES;
      if (seen) {
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < DH / 16; kk++)
          wgmma_ss(sf, sdesc(qw + kk * 256, 128, 2048), sdesc(ks + kk * 256, 128, 2048), kk > 0);
        wg_commit();
        wg_wait0();  // S, and the previous tile's P.V
        fence_regs(sf);
        fence_regs(&o[0][0]);
        fence_frags(pa);
#if FA_WS
        if (prev >= 0) mbar_arrive(bars + STAGES + prev);  // its P.V is done
#endif
        softmax_tile(s, o, m, l, kt, e0, e1, whole, sl2, qc);
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++) {
          pa[kk][0] = pack_bf16x2(s[2 * kk][0], s[2 * kk][1]);
          pa[kk][1] = pack_bf16x2(s[2 * kk][2], s[2 * kk][3]);
          pa[kk][2] = pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
          pa[kk][3] = pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
        }
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++)
          wgmma_rs(&o[0][0], pa[kk], sdesc(vs + kk * 2 * 2048, V_LBO, V_SBO));
        wg_commit();
      } else {
        wg_wait0();  // keeps the promise above for tiles this warpgroup skips
        fence_regs(&o[0][0]);
        fence_frags(pa);
#if FA_WS
        if (prev >= 0) mbar_arrive(bars + STAGES + prev);
#endif
      }
#if FA_WS
      prev = st;
      it++;
#else
      st = nx;
#endif
      kt = nk;
    }
    wg_wait0();
    fence_regs(&o[0][0]);
    fence_frags(pa);
#if FA_WS
    if (prev >= 0) mbar_arrive(bars + STAGES + prev);
#else
    cp_wait<0>();
#endif
#undef NEXT_TILE
    a = b;
  }
#if FA_WS
  if (loader) return;
#endif
  // Rows with no visible key (none in practice: a token sees itself) give 0.
  const int r0 = wr + qr, r1 = r0 + 8;
#pragma unroll
  for (int r = 0; r < 2; r++) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
  }
  const float inv0 = l[0] > 0.f ? vScale / l[0] : 0.f;
  const float inv1 = l[1] > 0.f ? vScale / l[1] : 0.f;
  bf16_t* o0 = out + (long long)(t0 + r0) * H * DH + (long long)h * DH + qc;
  bf16_t* o1 = out + (long long)(t0 + r1) * H * DH + (long long)h * DH + qc;
#pragma unroll
  for (int n = 0; n < NT; n++) {
    if (r0 < nrows)
      *reinterpret_cast<unsigned*>(o0 + n * 8) = pack2(o[n][0] * inv0, o[n][1] * inv0);
    if (r1 < nrows)
      *reinterpret_cast<unsigned*>(o1 + n * 8) = pack2(o[n][2] * inv1, o[n][3] * inv1);
  }
}
