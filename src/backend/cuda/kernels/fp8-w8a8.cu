// Operands of the W8A8 GEMMs (fp8-w8a8.ts: cuBLASLt's block-scaled FP8 matmul at prefill,
// the rule in tensor/fp8-activation.ts): activations quantized per row and 128 inputs, and a
// block-FP8 weight's per-row scales in the layouts cuBLASLt reads.
// Kernels:
//   w8a8_quant_b(codes, S, x, M, K, offsets, E): grid (M), block 128 (4 warps, one 128-input
//       group per warp in turn, 4 inputs per lane): s = amax/448 in f32 (1 for an all-zero
//       group), codes rn-satfinite(x / s) (fp8-activation.ts w8a8Quantize bit for bit). S in
//       cuBLASLt's VEC128 layout, groups outer and rows fastest ([K/128][M]); with `offsets`
//       (the MoE's E+1 expert row offsets, rows grouped by expert) one such block per expert,
//       expert e's [K/128][rows_e] from K/128 * offsets[e], so each expert's GEMM reads its own.
//   w8a8_wscales_blk(out, S, N, Kb, kbp, mats, bad): grid-stride over mats*ceil(N/128)*Kb:
//       BLK128x128 scales, out[m][rb][k] (row pitch kbp) = the scale of row 128*rb, group k;
//       adds to *bad the rows of each block whose scale differs (blocks that do not share one
//       scale: a fused weight of unaligned parts), so the caller can take VEC128 instead.
//   w8a8_wscales_vec(out, S, N, Kb, mats): grid-stride: VEC128 weight scales, out[m][k][n] =
//       S[m][n][k].
// No host reads, no allocation: graph-capturable. Tested by test/gpu/w8a8-check.ts (codes and
// scales against the host twin, GEMMs against the CPU backend).
#include "common.cuh"
#include "fp8.cuh"

extern "C" __global__ void __launch_bounds__(128) w8a8_quant_b(unsigned char* codes, float* S,
                                                               const bf16_t* x, int M, int K,
                                                               const int* offsets, int E) {
  const int m = blockIdx.x, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int Kb = K >> 7;
  long long s0 = m, pitch = M;  // VEC128: S[g * pitch + s0]
  if (offsets) {
    int lo = 0, hi = E;  // the expert e with offsets[e] <= m < offsets[e + 1]
    while (hi - lo > 1) {
      const int mid = (lo + hi) >> 1;
      if (offsets[mid] <= m) lo = mid; else hi = mid;
    }
    const int r0 = offsets[lo];
    pitch = offsets[lo + 1] - r0;
    s0 = (long long)Kb * r0 + (m - r0);
  }
  for (int g = warp; g < Kb; g += 4) {
    const long long at = (long long)m * K + g * 128 + lane * 4;
    const uint2 raw = *reinterpret_cast<const uint2*>(x + at);
    const float v[4] = {bf2f((bf16_t)(raw.x & 0xffffu)), bf2f((bf16_t)(raw.x >> 16)),
                        bf2f((bf16_t)(raw.y & 0xffffu)), bf2f((bf16_t)(raw.y >> 16))};
    float amax = fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3])));
    amax = warp_max(amax);
    const float s = amax > 0.f ? __fdiv_rn(amax, 448.f) : 1.f;
    unsigned packed = 0;
#pragma unroll
    for (int j = 0; j < 4; j++) packed |= (unsigned)f32_to_e4m3(__fdiv_rn(v[j], s)) << (8 * j);
    *reinterpret_cast<unsigned*>(codes + at) = packed;
    if (lane == 0) S[g * pitch + s0] = s;
  }
}

extern "C" __global__ void w8a8_wscales_blk(float* out, const float* S, int N, int Kb, int kbp,
                                            int mats, int* bad) {
  const int NB = (N + 127) / 128;
  const long long n = (long long)mats * NB * Kb;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const int k = (int)(i % Kb);
    const long long mb = i / Kb;  // m * NB + rb
    const int rb = (int)(mb % NB);
    const long long m = mb / NB;
    const long long r0 = m * N + rb * 128;
    const float first = S[r0 * Kb + k];
    out[mb * kbp + k] = first;
    const int rows = min(128, N - rb * 128);
    int differ = 0;
    for (int r = 1; r < rows; r++) differ += S[(r0 + r) * Kb + k] != first;
    if (differ) atomicAdd(bad, differ);
  }
}

extern "C" __global__ void w8a8_wscales_vec(float* out, const float* S, int N, int Kb, int mats) {
  const long long n = (long long)mats * N * Kb;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const int r = (int)(i % N);  // out index (m, k, r): rows fastest
    const long long mk = i / N;
    const int k = (int)(mk % Kb);
    const long long m = mk / Kb;
    out[i] = S[(m * N + r) * Kb + k];
  }
}
