// MSA block selection on tensor cores, in two kernels (same selection as msa.cu: vLLM's
// convention, shared/golden/README.md), for bf16 index queries and keys:
//
// msa_block_scores: score[h, t, b] = max over keys j <= positions[t] of block b (b*S..b*S+S-1,
//   page b of the sequence's page-table row) of <idxQ[t, h], idxK[j]> (f32, no scale), for the
//   batch tokens t0..t0+nT-1 (chunks bound the score buffer). mma.sync m16n8k16 bf16 over
//   64-token x 64-key tiles, double-buffered cp.async key tiles; a tile spanning sequences runs
//   once per run of rows of one sequence (as attention-prefill.cu). Blocks past a token's
//   position are not written.
//   Launch: grid (ceil(nT/tileRows), Hi, Z), block 128, dyn smem 2*64*(Di+8)*2 bytes; z takes
//   blocks [z*ceil(pageStride/Z), ...) so short batches (decode) still fill the GPU. tileRows is
//   64, or 1 for decode batches (one token per sequence: a 64-row tile would walk its 64
//   sequences one after another). Runs whose rows all see at most topk blocks are skipped
//   (msa_topk selects every block there without scores).
//   scores [Hi, nT, pageStride] f32; Di = MSA_DI (multiple of 16, <= 128); S % 64 == 0.
//
// msa_topk: per (token, index head) the first initBlocks and the last localBlocks candidates
//   0..positions[t]/S, then the best others (ties to the lower index); out [Hi, T, topk] i32,
//   ascending, -1 padded. Launch: grid (nT, Hi), block 128, dyn smem pageStride*5 bytes.
//
// KV_FP8 = 1 (-DKV_FP8): the index keys are E4M3 codes at scale 1 (--kv-cache-dtype fp8), widened
// exactly to bf16 on their way into shared memory (plain loads instead of cp.async).
// Tested by test/gpu/msa-prefill-check.ts (`gpu-check --only msa`) against the CPU backend (ids
// equal wherever the CPU's scores are not near-tied at the selection boundary) and msa.cu.
// The default for bf16 (CudaBackendOptions.msaScoring); passed on one H200 on 2026-12-02.
#include "common.cuh"
#include "mma.cuh"
#include "msa-pick.cuh"
#include "fp8.cuh"

#ifndef MSA_DI
#define MSA_DI 128
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
constexpr int BM = 64, BN = 64, KP = MSA_DI + 8, TILE = BN * KP;

/** A fragments of 16 rows (r0 = this lane's row, r1 = r0 + 8) x MSA_DI dims; absent rows 0. */
__device__ __forceinline__ void load_a_rows(unsigned (*qa)[4], const bf16_t* q0, const bf16_t* q1,
                                            bool ok0, bool ok1, int qc) {
#pragma unroll
  for (int kk = 0; kk < MSA_DI / 16; kk++) {
    const int c = kk * 16 + qc;
    qa[kk][0] = ok0 ? ld32(q0 + c) : 0u;
    qa[kk][1] = ok1 ? ld32(q1 + c) : 0u;
    qa[kk][2] = ok0 ? ld32(q0 + c + 8) : 0u;
    qa[kk][3] = ok1 ? ld32(q1 + c + 8) : 0u;
  }
}

__device__ __forceinline__ void load_keys(bf16_t* ks, const kv_t* kc, const int* pt, int kt,
                                          int hi, int S) {
  constexpr int VPR = MSA_DI / 8;
  for (int i = threadIdx.x; i < BN * VPR; i += blockDim.x) {
    const int j = i / VPR, v = i - j * VPR, key = kt + j;
    const bool ok = key < hi;
    const long long off = ok ? ((long long)pt[key / S] * S + key % S) * MSA_DI + v * 8 : 0;
#if KV_FP8
    *reinterpret_cast<uint4*>(ks + j * KP + v * 8) = ok ? ld8_bf16(kc + off) : make_uint4(0u, 0u, 0u, 0u);
#else
    cp_async16(ks + j * KP + v * 8, kc + off, ok);
#endif
  }
}
}  // namespace

extern "C" __global__ void __launch_bounds__(128) msa_block_scores(
    float* scores, const bf16_t* idxQ, const kv_t* idxK, const int* positions,
    const int* seqOfToken, const int* pageTable, int pageStride, int t0, int nT, int Hi, int S,
    int tileRows, int topk) {
  extern __shared__ __align__(16) unsigned char smraw[];
  bf16_t* sk = reinterpret_cast<bf16_t*>(smraw);  // 2 stages x [BN][KP]
  __shared__ int rowPos[BM], rowSeq[BM];
  constexpr int DI = MSA_DI, KT = DI / 16;
  const int tb = blockIdx.x * tileRows, h = blockIdx.y;
  const int bpz = (pageStride + gridDim.z - 1) / gridDim.z;
  const int bLo = blockIdx.z * bpz, bHi = min(pageStride, bLo + bpz);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int qr = lane >> 2, qc = (lane & 3) * 2;
  const int nrows = min(tileRows, nT - tb);
  if (tid < BM) {
    rowPos[tid] = tid < nrows ? positions[t0 + tb + tid] : -1;
    rowSeq[tid] = tid < nrows ? seqOfToken[t0 + tb + tid] : -1;
  }
  const int r0 = warp * 16 + qr, r1 = r0 + 8;
  unsigned qa[KT][4];
  load_a_rows(qa, idxQ + ((long long)(t0 + tb + r0) * Hi + h) * DI,
                  idxQ + ((long long)(t0 + tb + r1) * Hi + h) * DI, r0 < nrows, r1 < nrows, qc);
  float* out0 = scores + ((long long)h * nT + tb + r0) * pageStride;
  float* out1 = scores + ((long long)h * nT + tb + r1) * pageStride;
  __syncthreads();

  for (int a = 0; a < nrows;) {
    const int seq = rowSeq[a];
    int b = a + 1, hi = rowPos[a] + 1;
    while (b < nrows && rowSeq[b] == seq) hi = max(hi, rowPos[b] + 1), b++;
    if (hi <= topk * S) {  // every row sees at most topk blocks: msa_topk takes them all
      a = b;
      continue;
    }
    const int p0 = (r0 >= a && r0 < b) ? rowPos[r0] : -1;
    const int p1 = (r1 >= a && r1 < b) ? rowPos[r1] : -1;
    int wmax = max(p0, p1);
#pragma unroll
    for (int o2 = 16; o2 > 0; o2 >>= 1) wmax = max(wmax, __shfl_xor_sync(0xffffffffu, wmax, o2));
    const int* pt = pageTable + (long long)seq * pageStride;
    const int kLo = bLo * S, kHi = min(hi, bHi * S);
    if (kLo < kHi) load_keys(sk, idxK, pt, kLo, kHi, S);
    cp_commit();
    float bm[2] = {-INFINITY, -INFINITY};  // running max of this lane's two rows in the block
    for (int kt = kLo, st = 0; kt < kHi; kt += BN, st ^= 1) {
      if (kt + BN < kHi) load_keys(sk + (st ^ 1) * TILE, idxK, pt, kt + BN, kHi, S);
      cp_commit();
      cp_wait<1>();
      __syncthreads();
      const bf16_t* ks = sk + st * TILE;
      if (kt <= wmax) {
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int n = 0; n < BN / 8; n++) {
          float s[4] = {0.f, 0.f, 0.f, 0.f};
          const bf16_t* kr = ks + (n * 8 + qr) * KP + qc;
#pragma unroll
          for (int kk = 0; kk < KT; kk++)
            mma16816(s, qa[kk], ld32(kr + kk * 16), ld32(kr + kk * 16 + 8));
#pragma unroll
          for (int e = 0; e < 4; e++) {
            const int key = kt + n * 8 + qc + (e & 1);
            if (key <= (e < 2 ? p0 : p1)) mx[e >> 1] = fmaxf(mx[e >> 1], s[e]);
          }
        }
#pragma unroll
        for (int r = 0; r < 2; r++) {
          mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
          mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
          bm[r] = fmaxf(bm[r], mx[r]);
        }
      }
      const int blk = kt / S;
      if ((kt + BN) % S == 0 || kt + BN >= kHi) {  // last tile of block blk
        if ((lane & 3) == 0) {
          if (p0 >= blk * S) out0[blk] = bm[0];
          if (p1 >= blk * S) out1[blk] = bm[1];
        }
        bm[0] = bm[1] = -INFINITY;
      }
      __syncthreads();
    }
    a = b;
  }
}

extern "C" __global__ void __launch_bounds__(128) msa_topk(
    int* out, const float* scores, const int* positions, int pageStride, int t0, int nT, int T,
    int S, int topk, int initBlocks, int localBlocks) {
  extern __shared__ int score[];
  unsigned char* chosen = reinterpret_cast<unsigned char*>(score + pageStride);
  const int i = blockIdx.x, t = t0 + i, h = blockIdx.y, tid = threadIdx.x;
  const int nb = positions[t] / S + 1;
  int* dst = out + ((long long)h * T + t) * topk;
  if (nb <= topk) {
    for (int j = tid; j < topk; j += blockDim.x) dst[j] = j < nb ? j : -1;
    return;
  }
  const float* row = scores + ((long long)h * nT + i) * pageStride;
  for (int b = tid; b < nb; b += blockDim.x) {
    score[b] = f2ord(row[b]);
    chosen[b] = (b < initBlocks || b >= nb - localBlocks) ? 1 : 0;
  }
  __syncthreads();
  if (tid < 32) msa_pick(dst, score, chosen, nb, topk, tid);
}
