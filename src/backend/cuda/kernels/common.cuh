// Shared helpers for moeserve's kernels (NVRTC, no toolkit headers needed).
// bf16 is carried as its bit pattern (unsigned short); loads widen to float, stores round to
// nearest even with the sm_80+ cvt instruction. Type letters in kernel names: b = bf16, f = f32.
#pragma once

typedef unsigned short bf16_t;

#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

__device__ __forceinline__ float ldf(const float* p) { return *p; }
__device__ __forceinline__ float ldf(const bf16_t* p) {
  return __uint_as_float(((unsigned)*p) << 16);
}
__device__ __forceinline__ float bf2f(bf16_t v) { return __uint_as_float(((unsigned)v) << 16); }
__device__ __forceinline__ bf16_t f2bf(float v) {
  unsigned short r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(v));
  return r;
}
__device__ __forceinline__ void stf(float* p, float v) { *p = v; }
__device__ __forceinline__ void stf(bf16_t* p, float v) { *p = f2bf(v); }
/** Rounds v to the storage type T and back (what a store then load would give). */
template <typename T> __device__ __forceinline__ float roundto(float v);
template <> __device__ __forceinline__ float roundto<float>(float v) { return v; }
template <> __device__ __forceinline__ float roundto<bf16_t>(float v) { return bf2f(f2bf(v)); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/** Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it. */
__device__ __forceinline__ float block_sum(float v, float* scratch32) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch32[warp] = v;
  __syncthreads();
  v = lane < nw ? scratch32[lane] : 0.f;
  return warp_sum(v);
}

/** Float ordering as int, for atomicMax on floats in shared memory. */
__device__ __forceinline__ int f2ord(float f) {
  int i = __float_as_int(f);
  return i >= 0 ? i : i ^ 0x7fffffff;
}
__device__ __forceinline__ float ord2f(int i) { return __int_as_float(i >= 0 ? i : i ^ 0x7fffffff); }

/**
 * Programmatic dependent launch (sm_90; both no-ops for a plain launch or an older GPU). A kernel
 * declared `overlapsPrevious` (kernel-decl.ts) may start while the kernel before it in the
 * stream still runs. grid_dep_wait(): wait until that kernel has finished and its writes are
 * visible; every thread calls it before reading anything a previous kernel may write, before
 * writing anything, and before any early return (so this grid cannot finish before its
 * predecessor, and the kernel after it may rely on both). grid_dep_launch(): let the next
 * kernel, if it was launched to overlap this one, start its prologue (a GEMM streams its
 * weights while this kernel runs).
 */
__device__ __forceinline__ void grid_dep_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void grid_dep_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Instantiation helpers: M(suffix, T1, T2) over bf16/f32 pairs, M3 over triples.
#define FOR_2TYPES(M) M(bb, bf16_t, bf16_t) M(bf, bf16_t, float) M(fb, float, bf16_t) M(ff, float, float)
#define FOR_3TYPES(M)                                                                          \
  M(bbb, bf16_t, bf16_t, bf16_t) M(bbf, bf16_t, bf16_t, float) M(bfb, bf16_t, float, bf16_t)   \
  M(bff, bf16_t, float, float) M(fbb, float, bf16_t, bf16_t) M(fbf, float, bf16_t, float)      \
  M(ffb, float, float, bf16_t) M(fff, float, float, float)
