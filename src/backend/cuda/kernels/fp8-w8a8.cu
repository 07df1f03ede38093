// Operands of the W8A8 GEMMs (fp8-w8a8.ts: cuBLASLt's block-scaled FP8 matmul at prefill,
// the rule in tensor/fp8-activation.ts): activations quantized per row and 128 inputs, and a
// block-FP8 weight's per-row scales in the layouts cuBLASLt reads.
// Kernels:
//   w8a8_quant_b(codes, S, x, M, K, pitch, offsets, poffsets, E): grid (M), block 128 (4 warps,
//       one 128-input group per warp in turn, 4 inputs per lane): s = amax/448 in f32 (1 for an
//       all-zero group), codes rn-satfinite(x / s) (fp8-activation.ts w8a8Quantize bit for bit).
//       S in cuBLASLt's VEC128 layout, groups outer and rows fastest: [K/128][pitch] (pitch >= M:
//       cuBLASLt takes row counts that are multiples of 4, so the caller pads). With `offsets`
//       (the MoE's E+1 expert row offsets of x) and `poffsets` (the same experts padded to 4
//       rows each), row m of expert e goes to row poffsets[e] + (m - offsets[e]) of codes, and
//       each expert gets its own [K/128][padded rows_e] scale block from K/128 * poffsets[e].
//   w8a8_pad_rows(out, rows, n, offsets, poffsets, E): grid-stride: out[i] = rows[i] moved to
//       the padded layout (-1 stays): the combine's slot -> row map for padded outputs.
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

// The expert e of row m: offsets[e] <= m < offsets[e + 1] (E+1 non-decreasing offsets).
__device__ __forceinline__ int expert_of(const int* offsets, int E, int m) {
  int lo = 0, hi = E;
  while (hi - lo > 1) {
    const int mid = (lo + hi) >> 1;
    if (offsets[mid] <= m) lo = mid; else hi = mid;
  }
  return lo;
}

extern "C" __global__ void __launch_bounds__(128) w8a8_quant_b(unsigned char* codes, float* S,
                                                               const bf16_t* x, int M, int K,
                                                               int pitch, const int* offsets,
                                                               const int* poffsets, int E) {
  const int m = blockIdx.x, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int Kb = K >> 7;
  long long s0 = m, out = m, sp = pitch;  // dense: S[g * pitch + m], codes row m
  if (offsets) {
    const int e = expert_of(offsets, E, m);
    const int p0 = poffsets[e];
    out = p0 + (m - offsets[e]);
    sp = poffsets[e + 1] - p0;
    s0 = (long long)Kb * p0 + (out - p0);
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
    *reinterpret_cast<unsigned*>(codes + out * K + g * 128 + lane * 4) = packed;
    if (lane == 0) S[g * sp + s0] = s;
  }
}

extern "C" __global__ void w8a8_pad_rows(int* out, const int* rows, int n, const int* offsets,
                                         const int* poffsets, int E) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int r = rows[i];
    out[i] = r < 0 ? -1 : poffsets[expert_of(offsets, E, r)] + (r - offsets[expert_of(offsets, E, r)]);
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
