// MSA top-k pick, shared by msa.cu (scalar scoring) and msa-score.cu (tensor-core scoring).
#pragma once
#include "common.cuh"

/**
 * Run by one warp (lane = 0..31) after score[0..nb) (f2ord-encoded block scores) and chosen[]
 * (1 for the forced init/local blocks) are in shared memory: fills the remaining slots with the
 * best unchosen blocks (ties to the lower index), then writes the chosen ids ascending to
 * dst[0..topk), -1 padded.
 */
__device__ __forceinline__ void msa_pick(int* dst, const int* score, unsigned char* chosen, int nb,
                                         int topk, int lane) {
  int nChosen = 0;
  for (int b = lane; b < nb; b += 32) nChosen += chosen[b];
  for (int o = 16; o > 0; o >>= 1) nChosen += __shfl_xor_sync(0xffffffffu, nChosen, o);
  for (int r = nChosen; r < topk; r++) {
    int best = (-2147483647 - 1), bi = 0x7fffffff;
    for (int b = lane; b < nb; b += 32)
      if (!chosen[b] && score[b] > best) { best = score[b]; bi = b; }
    for (int o = 16; o > 0; o >>= 1) {
      const int ob = __shfl_xor_sync(0xffffffffu, best, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (ob > best || (ob == best && oi < bi)) { best = ob; bi = oi; }
    }
    if (lane == 0 && bi != 0x7fffffff) chosen[bi] = 1;
    __syncwarp();
  }
  if (lane == 0) {
    int n = 0;
    for (int b = 0; b < nb && n < topk; b++) if (chosen[b]) dst[n++] = b;
    for (; n < topk; n++) dst[n] = -1;
  }
}
