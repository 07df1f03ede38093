// The two ends of the per-expert cuBLAS MoE path (moe-expert-gemm.ts), used for prefill batches,
// where every expert holds enough token rows for cuBLAS to run near the GEMM rate:
//   moe_gather_rows     grid (n), block 128: xs[r, :] = x[perm[r] / Kw, :] (bf16, 16-byte moves),
//                       so the rows of expert e are one contiguous [count_e, D] operand
//   moe_combine_scaled_<o> grid (T), block 256: out[t] = sum_j rw[t*Kw+j] * y[slotRow[t*Kw+j]]
//                       in slot order; the routing weight is applied here instead of in the
//                       down GEMM's epilogue (the same fp32 product as moe_mma_down's `acc * rw`)
// Between them: cuBLAS gate|up GEMM per expert (f32 out), swiglu_bf (elementwise.cu), cuBLAS
// down GEMM per expert (f32 out); or (MOESERVE_MOE_GROUPED=1) one grouped cuBLAS GEMM for all
// experts' gate|up and one for their down, bf16 out (the grouped API's only output type for
// bf16 operands), swiglu_bb, then moe_combine_bf16y_<o>. Tested by test/gpu/moe-check.ts: the per-expert path against
// the CPU backend and against the tile kernels of moe.cu, on random routes with a shared expert.
#include "common.cuh"

extern "C" __global__ void moe_gather_rows(bf16_t* xs, const bf16_t* x, const int* perm, int Kw,
                                           int D) {
  const int r = blockIdx.x;
  const long long src = (long long)(perm[r] / Kw) * D;
  const uint4* in = reinterpret_cast<const uint4*>(x + src);
  uint4* out = reinterpret_cast<uint4*>(xs + (long long)r * D);
  for (int c = threadIdx.x; c < D / 8; c += blockDim.x) out[c] = in[c];
}

template <typename TO, typename TY>
__device__ void combine_scaled(TO* out, const TY* y, const int* slotRow, const float* rw,
                               int Kw, int D) {
  const int t = blockIdx.x;
  const int* sr = slotRow + (long long)t * Kw;
  const float* w = rw + (long long)t * Kw;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float s = 0.f;
    for (int j = 0; j < Kw; j++) {
      const int r = sr[j];
      if (r >= 0) s += __fmul_rn(ldf(y + (long long)r * D + d), w[j]);  // no FMA: as moe_mma_down
    }
    stf(out + (long long)t * D + d, s);
  }
}
extern "C" __global__ void moe_combine_scaled_b(bf16_t* out, const float* y, const int* slotRow,
                                                const float* rw, int Kw, int D) {
  combine_scaled(out, y, slotRow, rw, Kw, D);
}
extern "C" __global__ void moe_combine_scaled_f(float* out, const float* y, const int* slotRow,
                                                const float* rw, int Kw, int D) {
  combine_scaled(out, y, slotRow, rw, Kw, D);
}
// The grouped path (cuBLAS grouped GEMMs give bf16 outputs for bf16 operands only): y bf16.
extern "C" __global__ void moe_combine_bf16y_b(bf16_t* out, const bf16_t* y, const int* slotRow,
                                               const float* rw, int Kw, int D) {
  combine_scaled(out, y, slotRow, rw, Kw, D);
}
extern "C" __global__ void moe_combine_bf16y_f(float* out, const bf16_t* y, const int* slotRow,
                                               const float* rw, int Kw, int D) {
  combine_scaled(out, y, slotRow, rw, Kw, D);
}
