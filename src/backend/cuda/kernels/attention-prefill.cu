// Causal GQA prefill attention on tensor cores (flash attention 2 style), bf16 in / bf16 out,
// dense only, over the paged KV cache: mma.sync m16n8k16 bf16 with f32 accumulation and an f32
// online softmax; P is rounded to bf16 for the P.V product.
//   q [T, H*Dh], caches [P*S, Hkv*Dh], out [T, H*Dh]; token t of sequence seqOfToken[t] at
//   position positions[t] attends keys 0..positions[t] of its sequence (page table row), so a
//   chunk of a chunked prefill sees every cached key of its sequence.
// Launch: grid (ceil(T/64), H), block 128 (4 warps), dynamic smem (64*(Dh+8) + Dh*72)*2 bytes.
// A block takes 64 consecutive tokens of the batch for one query head; warp w owns rows
// 16w..16w+15. A tile may span sequences: it runs once per run of rows of one sequence
// (other rows masked), over that run's keys in tiles of 64 (K row-major, V transposed in
// shared memory so both B fragments are single 32-bit loads). Dh = FA_DH (a multiple of 16,
// at most 128, from -DFA_DH). KV_FP8 = 1 (-DKV_FP8): the caches hold E4M3 codes (--kv-cache-dtype
// fp8), widened exactly to bf16 as they are loaded; the key scale is in `scale` (the launcher
// passes scale * k_scale), the value scale multiplies the output (vScale, 1 for bf16 caches).
// Tested by test/gpu/prefill-attention-check.ts against the CPU backend and the scalar kernel.
#include "common.cuh"
#include "mma.cuh"
#include "fp8.cuh"

#ifndef FA_DH
#define FA_DH 128
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
constexpr int BM = 64;       // query rows per block
constexpr int BN = 64;       // keys per tile
constexpr int KP = FA_DH + 8; // K row pitch (bf16): 4-word skew, conflict-free fragment loads
constexpr int VP = BN + 8;    // V^T row pitch (bf16)
constexpr float LOG2E = 1.4426950408889634f;
}  // namespace

extern "C" __global__ void __launch_bounds__(128) attention_prefill(
    bf16_t* out, const bf16_t* q, const kv_t* kc, const kv_t* vc, const int* positions,
    const int* seqOfToken, const int* pageTable, int pageStride, int T, int H, int Hkv, int S,
    float scale, float vScale) {
  extern __shared__ __align__(16) unsigned char smraw[];
  bf16_t* ks = reinterpret_cast<bf16_t*>(smraw);  // [BN][KP]
  bf16_t* vt = ks + BN * KP;                       // [FA_DH][VP]
  __shared__ int rowPos[BM], rowSeq[BM];
  constexpr int DH = FA_DH, NT = DH / 8, KT = DH / 16;
  const int t0 = blockIdx.x * BM, h = blockIdx.y, g = h / (H / Hkv);
  const int W = Hkv * DH;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int qr = lane >> 2, qc = (lane & 3) * 2;  // fragment row / column pair
  const int nrows = min(BM, T - t0);
  if (tid < BM) {
    rowPos[tid] = tid < nrows ? positions[t0 + tid] : -1;
    rowSeq[tid] = tid < nrows ? seqOfToken[t0 + tid] : -1;
  }
  // Q fragments for this warp's 16 rows (rows past T are zero and never stored).
  unsigned qa[KT][4];
  {
    const int r0 = warp * 16 + qr, r1 = r0 + 8;
    const bf16_t* q0 = q + (long long)(t0 + r0) * H * DH + (long long)h * DH;
    const bf16_t* q1 = q + (long long)(t0 + r1) * H * DH + (long long)h * DH;
#pragma unroll
    for (int kk = 0; kk < KT; kk++) {
      const int c = kk * 16 + qc;
      qa[kk][0] = r0 < nrows ? ld32(q0 + c) : 0u;
      qa[kk][1] = r1 < nrows ? ld32(q1 + c) : 0u;
      qa[kk][2] = r0 < nrows ? ld32(q0 + c + 8) : 0u;
      qa[kk][3] = r1 < nrows ? ld32(q1 + c + 8) : 0u;
    }
  }
  float o[NT][4];
#pragma unroll
  for (int n = 0; n < NT; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  const float sl2 = scale * LOG2E;
  __syncthreads();

  // Runs of rows of one sequence: [a, b).
  for (int a = 0; a < nrows;) {
    const int seq = rowSeq[a];
    int b = a + 1, hi = rowPos[a] + 1;
    while (b < nrows && rowSeq[b] == seq) hi = max(hi, rowPos[b] + 1), b++;
    // This thread's two rows take part in the run iff a <= row < b; a warp skips key tiles
    // past its rows' last position.
    const int r0 = warp * 16 + qr, r1 = r0 + 8;
    const int p0 = (r0 >= a && r0 < b) ? rowPos[r0] : -1;
    const int p1 = (r1 >= a && r1 < b) ? rowPos[r1] : -1;
    int wmax = max(p0, p1);
#pragma unroll
    for (int o2 = 16; o2 > 0; o2 >>= 1) wmax = max(wmax, __shfl_xor_sync(0xffffffffu, wmax, o2));
    const int* pt = pageTable + (long long)seq * pageStride;
    for (int kt = 0; kt < hi; kt += BN) {
      __syncthreads();  // the previous tile's readers are done
      // 16-byte loads: key j, 8 dims at v*8; K row-major, V transposed. Consecutive threads
      // take consecutive keys so the transposed 2-byte stores hit distinct banks.
      constexpr int VPR = DH / 8;
      for (int i = tid; i < BN * VPR; i += blockDim.x) {
        const int v = i / BN, j = i - v * BN, key = kt + j;
        uint4 ku = make_uint4(0u, 0u, 0u, 0u), vu = ku;
        if (key < hi) {
          const long long off = ((long long)pt[key / S] * S + key % S) * W + g * DH + v * 8;
          ku = ld8_bf16(kc + off);
          vu = ld8_bf16(vc + off);
        }
        *reinterpret_cast<uint4*>(ks + j * KP + v * 8) = ku;
        const unsigned w4[4] = {vu.x, vu.y, vu.z, vu.w};
#pragma unroll
        for (int e = 0; e < 4; e++) {
          vt[(v * 8 + 2 * e) * VP + j] = (bf16_t)(w4[e] & 0xffffu);
          vt[(v * 8 + 2 * e + 1) * VP + j] = (bf16_t)(w4[e] >> 16);
        }
      }
      __syncthreads();
      if (kt > wmax) continue;  // no row of this warp sees these keys (uniform per warp)
      // S = Q K^T: 16 rows x 64 keys per warp.
      float s[BN / 8][4];
#pragma unroll
      for (int n = 0; n < BN / 8; n++) {
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
        const bf16_t* kr = ks + (n * 8 + qr) * KP + qc;
#pragma unroll
        for (int kk = 0; kk < KT; kk++) mma16816(s[n], qa[kk], ld32(kr + kk * 16), ld32(kr + kk * 16 + 8));
      }
      // Mask (causal, run, key range), then the online softmax in base 2.
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int n = 0; n < BN / 8; n++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int key = kt + n * 8 + qc + (e & 1);
          const int p = e < 2 ? p0 : p1;
          const float v = key <= p ? s[n][e] * sl2 : -INFINITY;
          s[n][e] = v;
          mx[e >> 1] = fmaxf(mx[e >> 1], v);
        }
      }
      float corr[2], msafe[2];
#pragma unroll
      for (int r = 0; r < 2; r++) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        const float mn = fmaxf(m[r], mx[r]);
        msafe[r] = mn == -INFINITY ? 0.f : mn;
        corr[r] = m[r] == -INFINITY ? 0.f : exp2f(m[r] - msafe[r]);
        m[r] = mn;
      }
      float rs[2] = {0.f, 0.f};
#pragma unroll
      for (int n = 0; n < BN / 8; n++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const float p = exp2f(s[n][e] - msafe[e >> 1]);  // -inf -> 0
          s[n][e] = p;
          rs[e >> 1] += p;
        }
      }
#pragma unroll
      for (int r = 0; r < 2; r++) {
        rs[r] += __shfl_xor_sync(0xffffffffu, rs[r], 1);
        rs[r] += __shfl_xor_sync(0xffffffffu, rs[r], 2);
        l[r] = l[r] * corr[r] + rs[r];
      }
#pragma unroll
      for (int n = 0; n < NT; n++) {
        o[n][0] *= corr[0]; o[n][1] *= corr[0];
        o[n][2] *= corr[1]; o[n][3] *= corr[1];
      }
      // O += P V: P's accumulator layout is the A fragment layout (keys 16kk..16kk+15).
#pragma unroll
      for (int kk = 0; kk < BN / 16; kk++) {
        const unsigned pa[4] = {pack2(s[2 * kk][0], s[2 * kk][1]), pack2(s[2 * kk][2], s[2 * kk][3]),
                                pack2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                pack2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int n = 0; n < NT; n++) {
          const bf16_t* vr = vt + (n * 8 + qr) * VP + kk * 16 + qc;
          mma16816(o[n], pa, ld32(vr), ld32(vr + 8));
        }
      }
    }
    a = b;
  }
  // Rows with no visible key (none in practice: a token sees itself) give 0, like the scalar
  // kernel.
  const int r0 = warp * 16 + qr, r1 = r0 + 8;
  const float inv0 = l[0] > 0.f ? vScale / l[0] : 0.f, inv1 = l[1] > 0.f ? vScale / l[1] : 0.f;
  bf16_t* o0 = out + (long long)(t0 + r0) * H * DH + (long long)h * DH + qc;
  bf16_t* o1 = out + (long long)(t0 + r1) * H * DH + (long long)h * DH + qc;
#pragma unroll
  for (int n = 0; n < NT; n++) {
    if (r0 < nrows) *reinterpret_cast<unsigned*>(o0 + n * 8) = pack2(o[n][0] * inv0, o[n][1] * inv0);
    if (r1 < nrows) *reinterpret_cast<unsigned*>(o1 + n * 8) = pack2(o[n][2] * inv1, o[n][3] * inv1);
  }
}
