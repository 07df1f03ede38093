// Checks on weights as they land on the device during a load (cuda-weight-uploader.ts).
//
// count_nonfinite_{b,f}(x, n, count): *count += number of NaN/Inf among x[0..n) (bf16 or f32
// bit patterns with an all-ones exponent). Launch: 1-D grid-stride, block 256 (a multiple of
// 32), grid min(ceil(n/256), 16 x SMs); one atomicAdd per warp that saw a bad value, so a clean
// tensor costs no atomics. The loader gives every tensor its own counter and reads them all
// back once at the end of the load.
// Tested by test/gpu/load-check.ts: NaN, +Inf and -Inf planted in bf16 and f32 tensors of a
// checkpoint are counted exactly (and the load names the tensor); clean tensors count 0; the
// CPU uploader's count (weight-uploader.ts countNonFinite, unit-tested) is the reference.
#include "common.cuh"

__device__ __forceinline__ void add_warp_count(int bad, int* count) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) bad += __shfl_xor_sync(0xffffffffu, bad, o);
  if ((threadIdx.x & 31) == 0 && bad > 0) atomicAdd(count, bad);
}

extern "C" __global__ void count_nonfinite_b(const bf16_t* x, long long n, int* count) {
  int bad = 0;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
    if ((x[i] & 0x7f80u) == 0x7f80u) bad++;
  add_warp_count(bad, count);  // after the loop: all 32 lanes reach the full-mask shuffle
}

extern "C" __global__ void count_nonfinite_f(const float* x, long long n, int* count) {
  int bad = 0;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
    if ((__float_as_uint(x[i]) & 0x7f800000u) == 0x7f800000u) bad++;
  add_warp_count(bad, count);
}
