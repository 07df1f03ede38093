// GQA attention for decode-shaped batches on tensor cores, bf16 in / bf16 out, dense or
// MSA-sparse, over the paged KV cache. The G query heads of one KV group are the 16 rows of an
// mma.sync m16n8k16 tile (GQA packing: each K/V tile is read once for all G heads), f32
// accumulation, f32 online softmax in base 2; P is rounded to bf16 for the P.V product.
//   q [T, H*Dh], caches [P*S, Hkv*Dh], out [T, H*Dh]; token t of sequence seqOfToken[t] at
//   position positions[t] attends keys 0..positions[t] of its sequence (page table row), or,
//   with blocks [Hkv, T, topk], only the keys of its selected blocks of S keys (b < 0: none).
// Launch: grid (T, Hkv, splits), block 128 (4 warps), dynamic smem 2*64*2*(Dh+8)*2 bytes.
// A block takes one token and one KV group; its keys (dense: split z's share of the 64-key
// tiles of 0..pos; sparse: the selected blocks seg with seg % splits == z) stream through
// shared memory in 64-key tiles, double-buffered with cp.async. Warp w scores keys
// 16w..16w+15 of each tile with its own online softmax; the four warps merge at the end.
// splits == 1 writes out; otherwise part [T*H, splits] x (Dh acc, m, l) in the natural-log
// convention of attention.cu's attention_combine, which merges the splits.
// Dh = AD_DH (-DAD_DH, a multiple of 16, at most 128); G = H / Hkv <= 16.
// KV_FP8 = 1 (-DKV_FP8): the caches hold E4M3 codes (--kv-cache-dtype fp8). The code tiles are
// double-buffered by cp.async (8-byte copies) behind one bf16 tile, into which each is widened
// exactly before its MMAs; dynamic smem 2*64*(Dh+8)*2 + 2*2*64*Dh bytes. The key scale is in
// `scale` (the launcher passes scale * k_scale), the value scale multiplies the output (vScale,
// 1 for bf16 caches).
// Tested by test/gpu/decode-attention-check.ts against the CPU backend and the scalar kernel.
#include "common.cuh"
#include "mma.cuh"
#include "fp8.cuh"

#ifndef AD_DH
#define AD_DH 128
#endif
#ifndef KV_FP8
#define KV_FP8 0
#endif
#if KV_FP8
typedef e4m3_t kv_t;
#else
typedef bf16_t kv_t;
#endif

namespace {
constexpr int BN = 64;          // keys per tile
constexpr int PITCH = AD_DH + 8;  // K and V row pitch (bf16): skew against bank conflicts
constexpr int MAX_TILES = 128;  // sparse tiles one block may take (topk/splits * S/64)
constexpr float LOG2E = 1.4426950408889634f;
constexpr float LN2 = 0.6931471805599453f;
}  // namespace

extern "C" __global__ void __launch_bounds__(128) attention_decode(
    bf16_t* out, const bf16_t* q, const kv_t* kc, const kv_t* vc, const int* positions,
    const int* seqOfToken, const int* pageTable, int pageStride, int T, int H, int Hkv, int S,
    float scale, float vScale, const int* blocks, int topk, float* part) {
  grid_dep_launch();  // the output projection after this streams its weights meanwhile
  extern __shared__ __align__(16) unsigned char smraw[];
  constexpr int DH = AD_DH, KT = DH / 16, NT = DH / 8;
  constexpr int STAGE = 2 * BN * PITCH;  // K then V, bf16 elements
  bf16_t* sm = reinterpret_cast<bf16_t*>(smraw);
#if KV_FP8
  constexpr int RAW = 2 * BN * DH;  // K then V codes of one tile, bytes
  unsigned char* raw = smraw + STAGE * 2;  // 2 stages of codes after one bf16 stage
#endif
  __shared__ int tileLo[MAX_TILES], tileHi[MAX_TILES], numTiles;
  __shared__ float wm[4][16], wl[4][16];
  const int t = blockIdx.x, g = blockIdx.y, z = blockIdx.z, splits = gridDim.z;
  const int G = H / Hkv, W = Hkv * DH;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int qr = lane >> 2, qc = (lane & 3) * 2;
  const int pos = positions[t];
  const int* pt = pageTable + (long long)seqOfToken[t] * pageStride;

  // This block's key tiles: dense, an even share of 0..pos; sparse, its selected blocks.
  int dLo = 0, dTiles = 0;
  if (!blocks) {
    const int nt = (pos + BN) / BN;
    const int a = (int)((long long)nt * z / splits), b = (int)((long long)nt * (z + 1) / splits);
    dLo = a * BN;
    dTiles = b - a;
  } else if (tid == 0) {
    int n = 0;
    for (int seg = z; seg < topk; seg += splits) {
      const int b = blocks[((long long)g * T + t) * topk + seg];
      if (b < 0 || (long long)b * S > pos) continue;
      const int hi = min(b * S + S, pos + 1);
      for (int lo = b * S; lo < hi && n < MAX_TILES; lo += BN, n++) {
        tileLo[n] = lo;
        tileHi[n] = min(lo + BN, hi);
      }
    }
    numTiles = n;
  }
  __syncthreads();
  const int ntiles = blocks ? numTiles : dTiles;
  auto range = [&](int i, int& lo, int& hi) {
    if (blocks) {
      lo = tileLo[i];
      hi = tileHi[i];
    } else {
      lo = dLo + i * BN;
      hi = min(lo + BN, pos + 1);
    }
  };
  auto load = [&](int stage, int i) {
    int lo, hi;
    range(i, lo, hi);
    bf16_t* ks = sm + stage * STAGE;
    bf16_t* vs = ks + BN * PITCH;
    for (int c = tid; c < BN * (DH / 8); c += blockDim.x) {
      const int j = c / (DH / 8), v = c - j * (DH / 8), key = lo + j;
      const bool ok = key < hi;
      const long long off = ok ? ((long long)pt[key / S] * S + key % S) * W + g * DH + v * 8 : 0;
#if KV_FP8
      (void)ks, (void)vs;
      cp_async8(raw + stage * RAW + c * 8, kc + off, ok);
      cp_async8(raw + stage * RAW + BN * DH + c * 8, vc + off, ok);
#else
      cp_async16(ks + j * PITCH + v * 8, kc + off, ok);
      cp_async16(vs + j * PITCH + v * 8, vc + off, ok);
#endif
    }
  };

  // Q fragments: rows are the group's heads (rows past G are zero and never stored).
  unsigned qa[KT][4];
  {
    const bf16_t* q0 = q + (long long)t * H * DH + (long long)(g * G + qr) * DH;
    const bf16_t* q1 = q0 + 8 * DH;
#pragma unroll
    for (int kk = 0; kk < KT; kk++) {
      const int c = kk * 16 + qc;
      qa[kk][0] = qr < G ? ld32(q0 + c) : 0u;
      qa[kk][1] = qr + 8 < G ? ld32(q1 + c) : 0u;
      qa[kk][2] = qr < G ? ld32(q0 + c + 8) : 0u;
      qa[kk][3] = qr + 8 < G ? ld32(q1 + c + 8) : 0u;
    }
  }
  float o[NT][4];
#pragma unroll
  for (int n = 0; n < NT; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  const float sl2 = scale * LOG2E;

  if (ntiles > 0) load(0, 0);
  cp_commit();
  for (int i = 0; i < ntiles; i++) {
    if (i + 1 < ntiles) load((i + 1) & 1, i + 1);
    cp_commit();
    cp_wait<1>();
    __syncthreads();
#if KV_FP8
    // Widen tile i's codes into the bf16 tile (its readers of tile i-1 are past the last sync).
    for (int c = tid; c < 2 * BN * (DH / 8); c += blockDim.x) {
      const int kv = c / (BN * (DH / 8)), r = c - kv * (BN * (DH / 8));
      const int j = r / (DH / 8), v = r - j * (DH / 8);
      *reinterpret_cast<uint4*>(sm + kv * BN * PITCH + j * PITCH + v * 8) =
          ld8_bf16(reinterpret_cast<const e4m3_t*>(raw + (i & 1) * RAW + c * 8));
    }
    __syncthreads();
    const bf16_t* ks = sm;
#else
    const bf16_t* ks = sm + (i & 1) * STAGE;
#endif
    int lo, hi;
    range(i, lo, hi);
    const bf16_t* vs = ks + BN * PITCH;
    const int k0 = warp * 16;  // this warp's 16 keys of the tile
    if (lo + k0 < hi) {
      float s[2][4];
#pragma unroll
      for (int n = 0; n < 2; n++) {
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
        const bf16_t* kr = ks + (k0 + n * 8 + qr) * PITCH + qc;
#pragma unroll
        for (int kk = 0; kk < KT; kk++) mma16816(s[n], qa[kk], ld32(kr + kk * 16), ld32(kr + kk * 16 + 8));
      }
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int n = 0; n < 2; n++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int key = lo + k0 + n * 8 + qc + (e & 1);
          const float v = key < hi ? s[n][e] * sl2 : -INFINITY;
          s[n][e] = v;
          mx[e >> 1] = fmaxf(mx[e >> 1], v);
        }
      }
      float corr[2], msafe[2];
#pragma unroll
      for (int r = 0; r < 2; r++) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        const float mn = fmaxf(m[r], mx[r]);
        msafe[r] = mn == -INFINITY ? 0.f : mn;
        corr[r] = m[r] == -INFINITY ? 0.f : exp2f(m[r] - msafe[r]);
        m[r] = mn;
      }
      float rs[2] = {0.f, 0.f};
#pragma unroll
      for (int n = 0; n < 2; n++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const float p = exp2f(s[n][e] - msafe[e >> 1]);  // -inf -> 0
          s[n][e] = p;
          rs[e >> 1] += p;
        }
      }
#pragma unroll
      for (int r = 0; r < 2; r++) {
        rs[r] += __shfl_xor_sync(0xffffffffu, rs[r], 1);
        rs[r] += __shfl_xor_sync(0xffffffffu, rs[r], 2);
        l[r] = l[r] * corr[r] + rs[r];
      }
#pragma unroll
      for (int n = 0; n < NT; n++) {
        o[n][0] *= corr[0]; o[n][1] *= corr[0];
        o[n][2] *= corr[1]; o[n][3] *= corr[1];
      }
      // O += P V: P's accumulator layout is the A fragment layout; V fragments come from the
      // row-major tile through ldmatrix.trans (keys k0.. k0+15, two 8-dim column groups each).
      const unsigned pa[4] = {pack2(s[0][0], s[0][1]), pack2(s[0][2], s[0][3]),
                              pack2(s[1][0], s[1][1]), pack2(s[1][2], s[1][3])};
      const bf16_t* vrow = vs + (k0 + (lane & 7) + ((lane >> 3) & 1) * 8) * PITCH + (lane >> 4) * 8;
#pragma unroll
      for (int np = 0; np < NT / 2; np++) {
        unsigned b[4];
        ldsm_x4_trans(b, vrow + np * 16);
        mma16816(o[2 * np], pa, b[0], b[1]);
        mma16816(o[2 * np + 1], pa, b[2], b[3]);
      }
    }
    __syncthreads();  // the next iteration's load overwrites this stage
  }
  cp_wait<0>();

  // Merge the four warps' softmax states: rows qr and qr + 8 of each warp.
  if ((lane & 3) == 0) {
    wm[warp][qr] = m[0];
    wm[warp][qr + 8] = m[1];
    wl[warp][qr] = l[0];
    wl[warp][qr + 8] = l[1];
  }
  __syncthreads();
  float* red = reinterpret_cast<float*>(smraw);  // [4][16][DH], over the K/V stages
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const int row = qr + 8 * r;
    float M = -INFINITY;
    for (int w = 0; w < 4; w++) M = fmaxf(M, wm[w][row]);
    const float f = m[r] == -INFINITY ? 0.f : exp2f(m[r] - M);
    float* dst = red + (warp * 16 + row) * DH + qc;
#pragma unroll
    for (int n = 0; n < NT; n++) {
      dst[n * 8] = o[n][2 * r] * f;
      dst[n * 8 + 1] = o[n][2 * r + 1] * f;
    }
  }
  __syncthreads();
  for (int idx = tid; idx < G * DH; idx += blockDim.x) {
    const int row = idx / DH, d = idx - row * DH;
    float M = -INFINITY;
    for (int w = 0; w < 4; w++) M = fmaxf(M, wm[w][row]);
    float L = 0.f, acc = 0.f;
    for (int w = 0; w < 4; w++) {
      if (wm[w][row] != -INFINITY) L += wl[w][row] * exp2f(wm[w][row] - M);
      acc += red[(w * 16 + row) * DH + d];
    }
    acc *= vScale;
    const long long th = (long long)t * H + g * G + row;
    if (splits == 1) {
      out[th * DH + d] = f2bf(L > 0.f ? acc / L : 0.f);
    } else {
      float* pp = part + (th * splits + z) * (DH + 2);
      pp[d] = acc;
      if (d == 0) {
        pp[DH] = M == -INFINITY ? -INFINITY : M * LN2;
        pp[DH + 1] = L;
      }
    }
  }
}
