// MSA block selection (vLLM convention, shared/golden/README.md): for token t at position p
// and index head h, candidate blocks are 0..p/S; score(b) = max over keys j <= p in block b of
// <idxQ[t,h], idxK[j]> (no scale). The first initBlocks and the last localBlocks candidates are
// always kept, the remaining slots go to the best other blocks (ties to the lower index);
// with <= topk candidates all are kept. out [Hidx, T, topk] i32, ascending, -1 padded.
// Launch: grid (T, Hidx), block 128, dynamic smem (Didx + pageStride) * 4 + pageStride bytes.
// Names: msa_select_<q><k>, b = bf16, f = f32, 8 = E4M3 index keys (--kv-cache-dtype fp8, scale
// 1: a positive key scale would not change the selection).
// Tested by test/gpu/gpu-check.ts against the CPU backend.
#include "common.cuh"
#include "msa-pick.cuh"
#include "fp8.cuh"

template <typename TQ, typename TK>
__device__ void msa_impl(int* out, const TQ* idxQ, const TK* idxK, const int* positions,
                         const int* seqOfToken, const int* pageTable, int pageStride, int T,
                         int Hi, int Di, int S, int topk, int initBlocks, int localBlocks) {
  extern __shared__ float sm[];
  float* q = sm;
  int* score = reinterpret_cast<int*>(sm + Di);
  unsigned char* chosen = reinterpret_cast<unsigned char*>(score + pageStride);
  const int t = blockIdx.x, h = blockIdx.y, tid = threadIdx.x;
  const int pos = positions[t];
  const int nb = pos / S + 1;
  const int* pt = pageTable + (long long)seqOfToken[t] * pageStride;
  int* dst = out + ((long long)h * T + t) * topk;
  if (nb <= topk) {
    for (int i = tid; i < topk; i += blockDim.x) dst[i] = i < nb ? i : -1;
    return;
  }
  for (int i = tid; i < Di; i += blockDim.x) q[i] = ldf(idxQ + ((long long)t * Hi + h) * Di + i);
  for (int b = tid; b < nb; b += blockDim.x) {
    score[b] = f2ord(-INFINITY);
    chosen[b] = (b < initBlocks || b >= nb - localBlocks) ? 1 : 0;
  }
  __syncthreads();
  for (int j = tid; j <= pos; j += blockDim.x) {
    const TK* k = idxK + ((long long)pt[j / S] * S + j % S) * Di;
    float dot = 0.f;
    for (int d = 0; d < Di; d++) dot += q[d] * ldf(k + d);
    atomicMax(score + j / S, f2ord(dot));
  }
  __syncthreads();
  if (tid < 32) msa_pick(dst, score, chosen, nb, topk, tid);
}

#define MSA(S_, TQ, TK)                                                                        \
  extern "C" __global__ void msa_select_##S_(int* out, const TQ* idxQ, const TK* idxK,         \
                                             const int* positions, const int* seqOfToken,      \
                                             const int* pageTable, int pageStride, int T,      \
                                             int Hi, int Di, int S, int topk, int initBlocks,  \
                                             int localBlocks) {                                \
    msa_impl(out, idxQ, idxK, positions, seqOfToken, pageTable, pageStride, T, Hi, Di, S, topk, \
             initBlocks, localBlocks);                                                         \
  }
FOR_2TYPES(MSA)
MSA(b8, bf16_t, e4m3_t)
MSA(f8, float, e4m3_t)
