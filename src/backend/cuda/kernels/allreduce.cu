// Collectives between 2..8 ranks over registered IPC buffers (the design of vLLM's custom
// all-reduce): each rank's buffer (ipc-layout.ts) holds a flag area, an `in` region its input
// is copied into before the launch, and a `tmp` region (two-shot). `peers` is a device array
// [W] of every rank's buffer base as mapped in this rank's context (IPC-opened for other
// processes, shared pointers for streams of one process); `cap` is the bytes of one region.
//
// Arithmetic: every reduced element is summed in float32 in rank order 0, 1, ..., W-1 and
// rounded once to the output type, whatever the kernel (two-shot does not rotate the order),
// so every rank gets the CPU communicator's bits (reduction-semantics.ts).
//
// Synchronisation: per-block flag barriers. Block b of every rank meets block b of every
// other rank; epoch e = epoch[b] + 1 is written to each peer's flag slot [phase][b][rank]
// (st.release.sys) and awaited in this rank's slots (ld.acquire.sys); thread 0 stores e back
// at the end. Epochs live in device memory and are bumped on the device, so a captured graph
// replays correctly; no host sync. All blocks of all ranks sharing a GPU must be resident at
// once: the host launches at most floor(SMs / ranks per GPU) blocks (ipc-layout.ts maxBlocks).
// A barrier that waits longer than IPC_SPIN_TIMEOUT_NS (a peer died) traps, so the rank's
// context fails and its process ends instead of spinning forever.
//
// Launch (type letter b = bf16, f = f32; vec = 1 when every pointer and offset is 16-byte
// aligned: 16-byte packs, the last n % pack elements one by one; two-shot walks packs always,
// vec only picks how `out` is stored; every rank of a call must launch the same grid):
//   ar_oneshot_<t>, ar_twoshot_<t>, all_gather_<t>, reduce_scatter_<t>, broadcast_<t>:
//     grid (min(maxBlocks, ceil(packs / 512))), block 512
//   ar_add_rmsnorm_block_<res><h><w>: grid (min(maxBlocks, rows)), block 256 (n >= 512)
//   ar_add_rmsnorm_warp_<res><h><w>: grid (min(maxBlocks, ceil(rows / 8))), block 256 (n < 512)
//   ar_add_rmsnorm_rows_<res><h><w>: grid (rows), block 256, no barrier inside: launched
//     between two ipc_barrier launches when rows > maxBlocks (n >= 512)
//   gemm_rs_reduce_<t>: grid (min(maxBlocks, ceil(packs / 512))), block 512 (after the pushes)
//   ipc_barrier: grid (1), block 32
// Tested by test/gpu/comm-check.ts (npm run test:gpu -- --only comm): 2, 4, 8 ranks on one GPU
// as streams and as processes, against the CPU definition bit for bit; the fused kernel
// against the unfused all-reduce + add_rmsnorm bit for bit; graph capture and replay; GEMM +
// reduce-scatter against GEMM then reduce_scatter bit for bit (streams and processes).
#include "common.cuh"
#include "norm-row.cuh"

#define IPC_MAX_RANKS 8
#define IPC_MAX_BLOCKS 128
#define IPC_SIGNAL_BYTES 16384
#define IPC_SPIN_TIMEOUT_NS 20000000000ULL

struct IpcSignal {
  unsigned flags[3][IPC_MAX_BLOCKS][IPC_MAX_RANKS];  // start, mid, end
  unsigned epoch[IPC_MAX_BLOCKS];
};
static_assert(sizeof(IpcSignal) <= IPC_SIGNAL_BYTES, "signal area overflows IPC_SIGNAL_BYTES");

enum { PH_START = 0, PH_MID = 1, PH_END = 2 };

__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/** This launch's view of the group: bases in shared memory, the epoch of this block. */
struct Ipc {
  const unsigned long long* base;  // [W] shared-memory copy of `peers`
  int rank, W;
  long long cap;
  unsigned epoch;
};

__device__ __forceinline__ IpcSignal* sig(const Ipc& c, int q) { return (IpcSignal*)c.base[q]; }
template <typename T> __device__ __forceinline__ const T* in_of(const Ipc& c, int q) {
  return (const T*)(c.base[q] + IPC_SIGNAL_BYTES);
}
template <typename T> __device__ __forceinline__ T* tmp_of(const Ipc& c, int q) {
  return (T*)(c.base[q] + IPC_SIGNAL_BYTES + c.cap);
}

/** Loads the peer table into shared memory and reads this block's next epoch. */
__device__ __forceinline__ Ipc ipc_begin(unsigned long long* sbase, const unsigned long long* peers,
                                         int rank, int W, long long cap) {
  if (threadIdx.x < W) sbase[threadIdx.x] = peers[threadIdx.x];
  __syncthreads();
  Ipc c{sbase, rank, W, cap, 0u};
  c.epoch = sig(c, rank)->epoch[blockIdx.x] + 1u;
  return c;
}

/** Block b of every rank meets here (thread q < W signals rank q and awaits rank q). */
__device__ __forceinline__ void ipc_barrier_at(const Ipc& c, int phase) {
  __syncthreads();
  if (threadIdx.x < c.W) {
    st_release(&sig(c, threadIdx.x)->flags[phase][blockIdx.x][c.rank], c.epoch);
    const unsigned* mine = &sig(c, c.rank)->flags[phase][blockIdx.x][threadIdx.x];
    const unsigned long long t0 = globaltimer();
    while (ld_acquire(mine) != c.epoch)
      if (globaltimer() - t0 > IPC_SPIN_TIMEOUT_NS) __trap();
  }
  __syncthreads();
}

/** The last barrier: after it no peer reads this rank's regions; the epoch is committed. */
__device__ __forceinline__ void ipc_end(const Ipc& c) {
  ipc_barrier_at(c, PH_END);
  if (threadIdx.x == 0) sig(c, c.rank)->epoch[blockIdx.x] = c.epoch;
}

// ---------------------------------------------------------------- 16-byte packs
template <typename T> struct Pack;
template <> struct Pack<bf16_t> { static constexpr int V = 8; };
template <> struct Pack<float> { static constexpr int V = 4; };

// Peer data is read with ld.global.cg (L2, not L1): it was written by other SMs. Inline PTX
// rather than __ldcg, which NVRTC does not provide for every type.
__device__ __forceinline__ uint4 ldcg4(const void* p) {
  uint4 u;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
               : "l"(p));
  return u;
}
__device__ __forceinline__ bf16_t ldcg(const bf16_t* p) {
  unsigned short v;
  asm volatile("ld.global.cg.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ float ldcg(const float* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ void ld_pack(float* f, const bf16_t* p) {
  const uint4 u = ldcg4(p);
  const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int k = 0; k < 4; k++) {
    f[2 * k] = __uint_as_float(w[k] << 16);
    f[2 * k + 1] = __uint_as_float(w[k] & 0xffff0000u);
  }
}
__device__ __forceinline__ void ld_pack(float* f, const float* p) {
  const uint4 u = ldcg4(p);
  f[0] = __uint_as_float(u.x), f[1] = __uint_as_float(u.y);
  f[2] = __uint_as_float(u.z), f[3] = __uint_as_float(u.w);
}
__device__ __forceinline__ void st_pack(bf16_t* p, const float* f) {
  unsigned w[4];
#pragma unroll
  for (int k = 0; k < 4; k++) w[k] = (unsigned)f2bf(f[2 * k]) | ((unsigned)f2bf(f[2 * k + 1]) << 16);
  *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
}
__device__ __forceinline__ void st_pack(float* p, const float* f) {
  *reinterpret_cast<float4*>(p) = make_float4(f[0], f[1], f[2], f[3]);
}
__device__ __forceinline__ float ld_peer(const bf16_t* p) { return bf2f(ldcg(p)); }
__device__ __forceinline__ float ld_peer(const float* p) { return ldcg(p); }

/** f = Σ_q in_q[off .. off+V) in rank order 0..W-1 (float32). */
template <typename T> __device__ __forceinline__ void sum_pack(float* f, const Ipc& c, long long off) {
  constexpr int V = Pack<T>::V;
  ld_pack(f, in_of<T>(c, 0) + off);
  for (int q = 1; q < c.W; q++) {
    float g[V];
    ld_pack(g, in_of<T>(c, q) + off);
#pragma unroll
    for (int k = 0; k < V; k++) f[k] += g[k];
  }
}
template <typename T> __device__ __forceinline__ float sum_one(const Ipc& c, long long i) {
  float s = ld_peer(in_of<T>(c, 0) + i);
  for (int q = 1; q < c.W; q++) s += ld_peer(in_of<T>(c, q) + i);
  return s;
}

/** dst[i] = Σ_q in_q[src0 + i] for i in [lo, hi), this block's share (grid-stride). */
template <typename T>
__device__ __forceinline__ void reduce_range(T* dst, const Ipc& c, long long src0, long long lo,
                                             long long hi, int vec) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  constexpr int V = Pack<T>::V;
  long long packed = lo;
  if (vec) {
    const long long P = (hi - lo) / V;
    for (long long j = t; j < P; j += stride) {
      float f[V];
      sum_pack<T>(f, c, src0 + lo + j * V);
      st_pack(dst + lo + j * V, f);
    }
    packed = lo + P * V;
  }
  for (long long i = packed + t; i < hi; i += stride) stf(dst + i, sum_one<T>(c, src0 + i));
}

/** dst[i] = src[i] for i in [lo, hi) (src a peer's region), this block's share. */
template <typename T>
__device__ __forceinline__ void copy_range(T* dst, const T* src, long long lo, long long hi, int vec) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  constexpr int V = Pack<T>::V;
  long long packed = lo;
  if (vec) {
    const long long P = (hi - lo) / V;
    for (long long j = t; j < P; j += stride)
      *reinterpret_cast<uint4*>(dst + lo + j * V) =
          ldcg4(src + lo + j * V);
    packed = lo + P * V;
  }
  for (long long i = packed + t; i < hi; i += stride) dst[i] = ldcg(src + i);
}

/**
 * Two-shot gather of one slice: the same pack-by-pack map as the reduce that wrote it (so
 * block b reads only what block b of the owner wrote), stored as packs when `vec`, else
 * element by element (an unaligned output).
 */
template <typename T>
__device__ __forceinline__ void gather_slice(T* dst, const T* src, long long lo, long long hi,
                                             int vec) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  constexpr int V = Pack<T>::V;
  const long long P = (hi - lo) / V;
  for (long long j = t; j < P; j += stride) {
    const long long o = lo + j * V;
    if (vec) {
      *reinterpret_cast<uint4*>(dst + o) = ldcg4(src + o);
    } else {
#pragma unroll
      for (int k = 0; k < V; k++) dst[o + k] = ldcg(src + o + k);
    }
  }
  for (long long i = lo + P * V + t; i < hi; i += stride) dst[i] = ldcg(src + i);
}

/** Rank q's two-shot slice [lo, hi) of n elements: whole packs cut by chunkRange, tail to W-1. */
__device__ __forceinline__ void twoshot_slice(long long n, int W, int q, int V, long long* lo,
                                              long long* hi) {
  const long long P = n / V;
  *lo = (q * P / W) * V;
  *hi = q == W - 1 ? n : ((q + 1) * P / W) * V;
}

// ---------------------------------------------------------------- collectives
/** out [n] = Σ_q in_q [n]: every rank reads every peer's whole input. */
template <typename T>
__device__ void ar_oneshot(T* out, const unsigned long long* peers, int rank, int W, long long cap,
                           long long n, int vec) {
  __shared__ unsigned long long sb[IPC_MAX_RANKS];
  const Ipc c = ipc_begin(sb, peers, rank, W, cap);
  ipc_barrier_at(c, PH_START);
  reduce_range(out, c, 0, 0, n, vec);
  ipc_end(c);
}

/**
 * Rank r reduces its slice into tmp_r (rank order 0..W-1), then gathers every rank's slice.
 * Slices are whole 16-byte packs (the tail on rank W-1) and both phases walk them pack by
 * pack whatever `vec` says (tmp and in are aligned); `vec` only chooses how `out` is stored.
 */
template <typename T>
__device__ void ar_twoshot(T* out, const unsigned long long* peers, int rank, int W, long long cap,
                           long long n, int vec) {
  __shared__ unsigned long long sb[IPC_MAX_RANKS];
  const Ipc c = ipc_begin(sb, peers, rank, W, cap);
  constexpr int V = Pack<T>::V;
  ipc_barrier_at(c, PH_START);
  long long lo, hi;
  twoshot_slice(n, W, rank, V, &lo, &hi);
  reduce_range(tmp_of<T>(c, rank), c, 0, lo, hi, 1);
  ipc_barrier_at(c, PH_MID);
  for (int q = 0; q < W; q++) {
    twoshot_slice(n, W, q, V, &lo, &hi);
    gather_slice(out, tmp_of<T>(c, q), lo, hi, vec);
  }
  ipc_end(c);
}

/** out [W*n] = concat_q in_q [n]. */
template <typename T>
__device__ void all_gather(T* out, const unsigned long long* peers, int rank, int W, long long cap,
                           long long n, int vec) {
  __shared__ unsigned long long sb[IPC_MAX_RANKS];
  const Ipc c = ipc_begin(sb, peers, rank, W, cap);
  ipc_barrier_at(c, PH_START);
  for (int q = 0; q < W; q++) copy_range(out + q * n, in_of<T>(c, q), 0, n, vec);
  ipc_end(c);
}

/** out [n] = rows [rank*n, (rank+1)*n) of Σ_q in_q [W*n]. */
template <typename T>
__device__ void reduce_scatter(T* out, const unsigned long long* peers, int rank, int W,
                               long long cap, long long n, int vec) {
  __shared__ unsigned long long sb[IPC_MAX_RANKS];
  const Ipc c = ipc_begin(sb, peers, rank, W, cap);
  ipc_barrier_at(c, PH_START);
  reduce_range(out, c, rank * n, 0, n, vec);
  ipc_end(c);
}

/** out [n] = in_root [n]. */
template <typename T>
__device__ void broadcast(T* out, const unsigned long long* peers, int rank, int W, long long cap,
                          long long n, int vec, int root) {
  __shared__ unsigned long long sb[IPC_MAX_RANKS];
  const Ipc c = ipc_begin(sb, peers, rank, W, cap);
  ipc_barrier_at(c, PH_START);
  copy_range(out, in_of<T>(c, root), 0, n, vec);
  ipc_end(c);
}

#define COLLECTIVES(S, T)                                                                        \
  extern "C" __global__ void ar_oneshot_##S(T* out, const unsigned long long* peers, int rank,  \
                                            int W, long long cap, long long n, int vec) {       \
    ar_oneshot(out, peers, rank, W, cap, n, vec);                                                \
  }                                                                                              \
  extern "C" __global__ void ar_twoshot_##S(T* out, const unsigned long long* peers, int rank,  \
                                            int W, long long cap, long long n, int vec) {       \
    ar_twoshot(out, peers, rank, W, cap, n, vec);                                                \
  }                                                                                              \
  extern "C" __global__ void all_gather_##S(T* out, const unsigned long long* peers, int rank,  \
                                            int W, long long cap, long long n, int vec) {       \
    all_gather(out, peers, rank, W, cap, n, vec);                                                \
  }                                                                                              \
  extern "C" __global__ void reduce_scatter_##S(T* out, const unsigned long long* peers,        \
                                                int rank, int W, long long cap, long long n,    \
                                                int vec) {                                       \
    reduce_scatter(out, peers, rank, W, cap, n, vec);                                            \
  }                                                                                              \
  extern "C" __global__ void broadcast_##S(T* out, const unsigned long long* peers, int rank,   \
                                           int W, long long cap, long long n, int vec,          \
                                           int root) {                                           \
    broadcast(out, peers, rank, W, cap, n, vec, root);                                           \
  }
COLLECTIVES(b, bf16_t)
COLLECTIVES(f, float)

// ---------------------------------------------------------------- GEMM + reduce-scatter
// The last step of a GEMM + reduce-scatter (gemm-reduce-scatter.ts): rank q's GEMM rows for
// this rank were pushed into slot q (n elements at q*n) of this rank's tmp region by copies
// ordered before this launch on rank q's stream; this rank's own rows are `self` (never
// copied). out [n] = Σ_q slot_q [n] in rank order 0..W-1 in float32, rounded once: what
// reduce_scatter computes from the same partials, bit for bit.
template <typename T>
__device__ __forceinline__ const T* rs_slot(const Ipc& c, const T* self, int q, long long n) {
  return q == c.rank ? self : tmp_of<T>(c, c.rank) + q * n;
}

template <typename T>
__device__ void gemm_rs_reduce(T* out, const T* self, const unsigned long long* peers, int rank,
                               int W, long long cap, long long n, int vec) {
  __shared__ unsigned long long sb[IPC_MAX_RANKS];
  const Ipc c = ipc_begin(sb, peers, rank, W, cap);
  ipc_barrier_at(c, PH_START);  // every rank's pushes into this rank's slots are done
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  constexpr int V = Pack<T>::V;
  long long packed = 0;
  if (vec) {
    const long long P = n / V;
    for (long long j = t; j < P; j += stride) {
      float f[V];
      ld_pack(f, rs_slot<T>(c, self, 0, n) + j * V);
      for (int q = 1; q < W; q++) {
        float g[V];
        ld_pack(g, rs_slot<T>(c, self, q, n) + j * V);
#pragma unroll
        for (int k = 0; k < V; k++) f[k] += g[k];
      }
      st_pack(out + j * V, f);
    }
    packed = P * V;
  }
  for (long long i = packed + t; i < n; i += stride) {
    float s = ld_peer(rs_slot<T>(c, self, 0, n) + i);
    for (int q = 1; q < W; q++) s += ld_peer(rs_slot<T>(c, self, q, n) + i);
    stf(out + i, s);
  }
  ipc_end(c);  // after it no rank reads this rank's slots: the next op may refill them
}

#define GEMM_RS(S, T)                                                                            \
  extern "C" __global__ void gemm_rs_reduce_##S(T* out, const T* self,                          \
                                                const unsigned long long* peers, int rank,      \
                                                int W, long long cap, long long n, int vec) {   \
    gemm_rs_reduce(out, self, peers, rank, W, cap, n, vec);                                      \
  }
GEMM_RS(b, bf16_t)
GEMM_RS(f, float)

// ---------------------------------------------------------------- fused all-reduce + add + norm
// res [rows, n] += round_TX(Σ_q h_q) ; out = GemmaRMSNorm(res; w): the immediate path's
// all-reduce (h stored in TX, rounded once) then add_rmsnorm, row for row the same arithmetic
// (norm-row.cuh), so the fused result equals the unfused one bit for bit.
template <typename TR, typename TX, typename TW>
__device__ void ar_add_rms_block(TR* out, TR* res, const TW* w, const unsigned long long* peers,
                                 int rank, int W, long long cap, long long rows, int n, float eps) {
  __shared__ unsigned long long sb[IPC_MAX_RANKS];
  __shared__ float scratch[32];
  const Ipc c = ipc_begin(sb, peers, rank, W, cap);
  ipc_barrier_at(c, PH_START);
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const long long off = row * n;
    add_rms_row_block(out + off, res + off, w, n, eps, scratch,
                      [&c, off](int i) { return roundto<TX>(sum_one<TX>(c, off + i)); });
  }
  ipc_end(c);
}

template <typename TR, typename TX, typename TW>
__device__ void ar_add_rms_warp(TR* out, TR* res, const TW* w, const unsigned long long* peers,
                                int rank, int W, long long cap, long long rows, int n, float eps) {
  __shared__ unsigned long long sb[IPC_MAX_RANKS];
  const Ipc c = ipc_begin(sb, peers, rank, W, cap);
  ipc_barrier_at(c, PH_START);
  for (long long g = blockIdx.x; g * 8 < rows; g += gridDim.x) {
    const long long row = g * 8 + (threadIdx.x >> 5);
    if (row >= rows) continue;  // no return: every thread must reach the end barrier
    const long long off = row * n;
    add_rms_row_warp(out + off, res + off, w, n, eps,
                     [&c, off](int i) { return roundto<TX>(sum_one<TX>(c, off + i)); });
  }
  ipc_end(c);
}

/**
 * The same rows without barriers, one block per row (the unfused add_rmsnorm's grid): for
 * many rows the host brackets it with ipc_barrier launches (every rank's input staged before;
 * every rank done reading before anyone restages), so the grid is not bounded by residency.
 */
template <typename TR, typename TX, typename TW>
__device__ void ar_add_rms_rows(TR* out, TR* res, const TW* w, const unsigned long long* peers,
                                int rank, int W, long long cap, long long rows, int n, float eps) {
  __shared__ unsigned long long sb[IPC_MAX_RANKS];
  __shared__ float scratch[32];
  if (threadIdx.x < W) sb[threadIdx.x] = peers[threadIdx.x];
  __syncthreads();
  const Ipc c{sb, rank, W, cap, 0u};
  const long long off = blockIdx.x * (long long)n;
  add_rms_row_block(out + off, res + off, w, n, eps, scratch,
                    [&c, off](int i) { return roundto<TX>(sum_one<TX>(c, off + i)); });
}

#define AR_ADD_RMS(S, TR, TX, TW)                                                                \
  extern "C" __global__ void ar_add_rmsnorm_block_##S(TR* out, TR* res, const TW* w,           \
                                                      const unsigned long long* peers, int rank, \
                                                      int W, long long cap, long long rows,      \
                                                      int n, float eps) {                        \
    ar_add_rms_block<TR, TX, TW>(out, res, w, peers, rank, W, cap, rows, n, eps);                \
  }                                                                                              \
  extern "C" __global__ void ar_add_rmsnorm_warp_##S(TR* out, TR* res, const TW* w,            \
                                                     const unsigned long long* peers, int rank,  \
                                                     int W, long long cap, long long rows,       \
                                                     int n, float eps) {                         \
    ar_add_rms_warp<TR, TX, TW>(out, res, w, peers, rank, W, cap, rows, n, eps);                 \
  }                                                                                              \
  extern "C" __global__ void ar_add_rmsnorm_rows_##S(TR* out, TR* res, const TW* w,            \
                                                     const unsigned long long* peers, int rank,  \
                                                     int W, long long cap, long long rows,       \
                                                     int n, float eps) {                         \
    ar_add_rms_rows<TR, TX, TW>(out, res, w, peers, rank, W, cap, rows, n, eps);                 \
  }
FOR_3TYPES(AR_ADD_RMS)

/** Every rank's block 0 meets (the host waits for the stream after it). */
extern "C" __global__ void ipc_barrier(const unsigned long long* peers, int rank, int W,
                                       long long cap) {
  __shared__ unsigned long long sb[IPC_MAX_RANKS];
  const Ipc c = ipc_begin(sb, peers, rank, W, cap);
  ipc_barrier_at(c, PH_START);
  ipc_end(c);
}
