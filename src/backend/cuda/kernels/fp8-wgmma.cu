// Block-FP8 decode GEMMs on Hopper's warpgroup MMA (wgmma.mma_async, sm_90a only):
// out[M, N] = x[M, K] . W[N, K]^T for M <= 8*NF tokens, W E4M3 codes with an f32 scale per row
// and G inputs (G % 128 == 0), the same contract and arithmetic as fp8-gemv.cu (W8A16: codes
// widened to bf16 exactly, fp32 partial sums per 128-input tile times the row's block scale).
//
// Why another kernel: fp8-gemv.cu's mma.sync loop streams the codes at 37-45% of the copy rate
// at 32 tokens (session 12 W3/W5/W7), whatever its knobs. There each warp loads its own copy
// of x's fragments and issues 32 MMAs per 2 KB of codes. Here a warpgroup owns 64 weight rows
// (warp w rows 16w.., lanes as fp8-gemv.cu's: lane (g, t) loads 16 codes of rows g and g+8 per
// 64-input half) and a K range. It widens the codes into the A fragments in registers, and the
// tensor cores read x (the B operand, n = 8*NF tokens) from shared memory. Per 128-input tile
// that is 8 wgmma m64nNk16 and no x loads by the MMA warps.
// The MMA k order is fp8-gemv.cu's permutation: step s = 4h + j of a tile takes, at k-slot
// kappa, input 64h + 16*((kappa%8)/2) + 4j + 2*(kappa/8) + kappa%2. x is written to shared
// memory in that slot order (each thread scatters the 4-byte pairs of its 16-byte loads), as
// 8x8 core matrices, K-major, no swizzle: token n's slot sigma at byte
// ((n/8)*16 + sigma/8)*128 + (n%8)*16 + (sigma%8)*2. The descriptor of step s starts at s*256,
// leading byte offset 128 (the next 8 slots) and stride byte offset 2048 (the next 8 tokens),
// as attention-prefill-wg.cu's K operand.
// Per tile: the codes of the tile after next are loaded into the registers just widened, the
// next tile's x is staged into the other buffer while the MMAs run, then the warpgroup waits
// for them, adds scale * partial, and meets at its named barrier.
// Kernels (o = b | f output, NF = 1 / 2 / 4: n = 8 / 16 / 32 token columns):
//   fp8_wg_<o>_<NF>(W, S, G, x, M, N, K, out): grid (ceil(N/64)), block 128*KS (KS 1..4
//       warpgroups, each a K range of whole 128-input tiles), dyn smem KS*2*NF*2048 bytes;
//       K % 128 == 0, M <= 8*NF. Warpgroup 0 adds the KS partials in order (deterministic).
// Measured (session 12 W8, skinny-bench on one H200, MiniMax-M3 shapes): correct (gpu-check
// 128/128 against the CPU), but slower than fp8-gemv.cu at every M, e.g. q_proj M = 1 / 32
// 0.0223 / 0.0343 ms against 0.0175 / 0.0304, LM head 0.394 / 0.676 against 0.317 / 0.566.
// The likely cause (not profiled): each tile waits for its MMAs and meets a barrier, so a
// warpgroup's stream stalls every 8 KB of codes.
// It is opt-in (checks, skinny-bench `wg8`) as the base of a deeper-pipelined form.
// No host reads, no allocation: graph-capturable. Tested by test/gpu/wgmma-gemm-check.ts against
// the CPU backend on the same quantized weights (ragged M and N, KS 1 / 3 / automatic, f32 and
// bf16 out) and a repeated launch bit for bit.
#include "common.cuh"
#include "fp8.cuh"

namespace {

__device__ __forceinline__ uint4 wg8_ld_stream(const unsigned char* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

/** Shared-memory matrix descriptor, no swizzle (layout type 0); byte offsets in 16 B units. */
__device__ __forceinline__ unsigned long long wg8_desc(const void* p) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(p);
  return (unsigned long long)((a >> 4) & 0x3FFFu) | ((unsigned long long)(128u >> 4) << 16) |
         ((unsigned long long)(2048u >> 4) << 32);
}

/** d (+)= A B, m64nNk16 (N = 8*NF), A in registers (the mma A fragment), B K-major in smem. */
template <int NF>
__device__ __forceinline__ void wg8_mma(float* d, const unsigned* a, unsigned long long b,
                                        int accum);
template <>
__device__ __forceinline__ void wg8_mma<1>(float* d, const unsigned* a, unsigned long long b,
                                           int accum) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, "
      "p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accum));
}
template <>
__device__ __forceinline__ void wg8_mma<2>(float* d, const unsigned* a, unsigned long long b,
                                           int accum) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7}, "
      "{%8,%9,%10,%11}, %12, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accum));
}
template <>
__device__ __forceinline__ void wg8_mma<4>(float* d, const unsigned* a, unsigned long long b,
                                           int accum) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, "
      "p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accum));
}

__device__ __forceinline__ void wg8_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg8_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg8_wait0() {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
/** This thread's st.shared writes visible to wgmma (the async proxy). */
__device__ __forceinline__ void wg8_fence_smem() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
/** The 128 threads of warpgroup `wg` meet (named barrier 1 + wg; 0 is __syncthreads). */
__device__ __forceinline__ void wg8_bar(int wg) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(wg + 1) : "memory");
}

/**
 * x's 128-input tile at k0 (token rows < M; zeros past them) into `xs` in the permuted slot
 * order (header): the 16-byte load of inputs 8u..8u+7 holds 4 pairs; pair p goes to step
 * s = 4*(u/8) + 2*(u%2) + p/2 at slot kappa = (p%2)*8 + 2*((u%8)/2).
 */
template <int NF>
__device__ __forceinline__ void wg8_stage_x(unsigned char* xs, const bf16_t* x, int M, int K,
                                            int k0, int wt) {
#pragma unroll
  for (int i = 0; i < NF; i++) {
    const int idx = i * 128 + wt, n = idx >> 4, u = idx & 15;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (n < M) v = *reinterpret_cast<const uint4*>(x + (long long)n * K + k0 + 8 * u);
    const unsigned pr[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int p = 0; p < 4; p++) {
      const int s = 4 * (u >> 3) + 2 * (u & 1) + (p >> 1);
      const int sigma = 16 * s + (p & 1) * 8 + 2 * ((u & 7) >> 1);
      const int byte = (((n >> 3) * 16 + (sigma >> 3)) << 7) + ((n & 7) << 4) + ((sigma & 7) << 1);
      *reinterpret_cast<unsigned*>(xs + byte) = pr[p];
    }
  }
}

/** The 64 B of codes (rows g, g+8; two 64-input halves) and 2 scales of tile kt. */
struct Wg8Tile {
  uint4 w[2][2];
  float sa, sb;
};

__device__ __forceinline__ void wg8_load(Wg8Tile& d, const unsigned char* wa,
                                         const unsigned char* wb, const float* sa,
                                         const float* sb, int kt, int G) {
  const int k = kt * 128;
#pragma unroll
  for (int h = 0; h < 2; h++) {
    d.w[h][0] = wg8_ld_stream(wa + k + 64 * h);
    d.w[h][1] = wg8_ld_stream(wb + k + 64 * h);
  }
  d.sa = __ldg(sa + k / G);
  d.sb = __ldg(sb + k / G);
}

}  // namespace

template <int NF>
__device__ void fp8_wg(const unsigned char* __restrict__ W, const float* __restrict__ S, int G,
                       const bf16_t* __restrict__ X, int M, int N, int K, void* outp,
                       bool outF32) {
  constexpr int XT = NF * 2048;  // one x tile: 8*NF tokens x 128 slots x 2 bytes
  extern __shared__ __align__(128) unsigned char smem[];
  const int wt = threadIdx.x & 127, wg = threadIdx.x >> 7, KS = blockDim.x >> 7;
  const int warp = wt >> 5, lane = wt & 31, g = lane >> 2, t = lane & 3;
  const int KT = K / 128, Kg = (K + G - 1) / G;
  const int kt0 = wg * KT / KS, kt1 = (wg + 1) * KT / KS;
  const int n0 = blockIdx.x * 64 + 16 * warp;
  const long long ra = min(n0 + g, N - 1), rb = min(n0 + g + 8, N - 1);
  const unsigned char* wa = W + ra * K + 16 * t;
  const unsigned char* wb = W + rb * K + 16 * t;
  const float* sa = S + ra * Kg;
  const float* sb = S + rb * Kg;
  unsigned char* xs = smem + wg * 2 * XT;

  float acc[NF * 4], part[NF * 4];
#pragma unroll
  for (int i = 0; i < NF * 4; i++) acc[i] = 0.f;
  Wg8Tile tl[2];
  if (kt0 < kt1) wg8_load(tl[0], wa, wb, sa, sb, kt0, G);
  if (kt0 + 1 < kt1) wg8_load(tl[1], wa, wb, sa, sb, kt0 + 1, G);
  if (kt0 < kt1) wg8_stage_x<NF>(xs, X, M, K, kt0 * 128, wt);
  wg8_fence_smem();
  wg8_bar(wg);
  auto tile = [&](Wg8Tile& c, int kt, int buf) {
    unsigned a[8][4];
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const unsigned v0[4] = {c.w[h][0].x, c.w[h][0].y, c.w[h][0].z, c.w[h][0].w};
      const unsigned v1[4] = {c.w[h][1].x, c.w[h][1].y, c.w[h][1].z, c.w[h][1].w};
#pragma unroll
      for (int j = 0; j < 4; j++) {
        e4m3x4_widen_bf16(v0[j], a[4 * h + j][0], a[4 * h + j][2]);
        e4m3x4_widen_bf16(v1[j], a[4 * h + j][1], a[4 * h + j][3]);
      }
    }
    const float s0 = c.sa, s1 = c.sb;
    if (kt + 2 < kt1) wg8_load(c, wa, wb, sa, sb, kt + 2, G);  // registers free once widened
    wg8_fence();
#pragma unroll
    for (int s = 0; s < 8; s++) wg8_mma<NF>(part, a[s], wg8_desc(xs + buf * XT + s * 256), s > 0);
    wg8_commit();
    // The next tile's x into the other buffer (last read by the MMAs waited for a tile ago).
    if (kt + 1 < kt1) wg8_stage_x<NF>(xs + (buf ^ 1) * XT, X, M, K, (kt + 1) * 128, wt);
    wg8_wait0();
    // The MMAs read a and write part asynchronously: keep a's registers live, and part's reads,
    // until after the wait (attention-prefill-wg.cu's fence_regs).
#pragma unroll
    for (int s = 0; s < 8; s++)
#pragma unroll
      for (int i = 0; i < 4; i++) asm volatile("" ::"r"(a[s][i]) : "memory");
#pragma unroll
    for (int i = 0; i < NF * 4; i++) asm volatile("" : "+f"(part[i])::"memory");
#pragma unroll
    for (int f = 0; f < NF; f++)
#pragma unroll
      for (int q = 0; q < 4; q++) acc[4 * f + q] += (q < 2 ? s0 : s1) * part[4 * f + q];
    wg8_fence_smem();
    wg8_bar(wg);
  };
  for (int kt = kt0; kt < kt1; kt += 2) {
    tile(tl[0], kt, 0);
    if (kt + 1 < kt1) tile(tl[1], kt + 1, 1);
  }

  if (KS > 1) {
    __syncthreads();  // every warpgroup is past its MMAs: the x buffers become the partials
    float* red = reinterpret_cast<float*>(smem);
#pragma unroll
    for (int i = 0; i < NF * 4; i++) red[(wg * NF * 4 + i) * 128 + wt] = acc[i];
    __syncthreads();
    if (wg != 0) return;
#pragma unroll
    for (int i = 0; i < NF * 4; i++) {
      float v = red[i * 128 + wt];
      for (int p = 1; p < KS; p++) v += red[(p * NF * 4 + i) * 128 + wt];
      acc[i] = v;
    }
  }
  // Accumulator (m64nN, the mma C fragment per warp and n8 column block f): rows 16w + g
  // (q 0, 1) and + 8 (q 2, 3), columns = token rows 8f + 2t, 8f + 2t + 1.
#pragma unroll
  for (int f = 0; f < NF; f++)
#pragma unroll
    for (int q = 0; q < 4; q++) {
      const int n = n0 + g + (q >> 1) * 8, row = f * 8 + 2 * t + (q & 1);
      if (n >= N || row >= M) continue;
      const long long o = (long long)row * N + n;
      if (outF32)
        reinterpret_cast<float*>(outp)[o] = acc[4 * f + q];
      else
        reinterpret_cast<bf16_t*>(outp)[o] = f2bf(acc[4 * f + q]);
    }
}

#define FP8_WG(O, OF, NF)                                                                    \
  extern "C" __global__ void __launch_bounds__(512) fp8_wg_##O##_##NF(                       \
      const unsigned char* W, const float* S, int G, const bf16_t* x, int M, int N, int K,   \
      void* out) {                                                                           \
    fp8_wg<NF>(W, S, G, x, M, N, K, out, OF);                                                \
  }
FP8_WG(b, false, 1)
FP8_WG(b, false, 2)
FP8_WG(b, false, 4)
FP8_WG(f, true, 1)
FP8_WG(f, true, 2)
FP8_WG(f, true, 4)
