// Batched sampling on the device, one block per sampled row, in the host sampler's order
// (src/engine/sampler.ts, logits-processing.ts): allowed-token mask, sparse logit bias,
// repetition / frequency / presence penalties (per-row output-token counts and prompt-presence
// bits kept on the device; the kernel increments the count of the token it picks), temperature,
// then min_p, top_k, top_p and one uniform draw from a counter-based Philox4x32-10 generator
// keyed by (seed, step): the same seed gives the same tokens run to run, whatever else is in
// the batch. Greedy (temperature < 1e-5) is the argmax, ties to the lower id, as are top_k and
// top_logprobs ties. Logprobs: log-softmax after penalties and temperature (temperature 0
// counts as 1), before truncation. The logits row is processed in place.
//
// Truncation without sorting: keys are the order-preserving bits of the processed logits; the
// top_k boundary key is found by a 4-pass radix select on counts, the top_p boundary by a
// 4-pass radix select on probability mass (fixed point, weights exp(x - max) scaled by 2^32,
// summed in 64-bit integers: deterministic, so seeded draws do not depend on atomics' order).
// Tokens tied on the boundary key are kept lowest id first. The draw walks the kept tokens in
// id order (a block scan of per-thread chunk masses). Tokens with weight below 2^-32 of the top
// token get mass 0 and are never drawn (the host sampler would draw them with p < 2.4e-10).
//
// Launch: grid (number of sampled rows), block 1024, no dynamic smem. Row r reads its
// parameters from rows[r] (struct SampleRow below, written by gpu-sampler.ts).
// Tested by test/gpu/sampler-check.ts: greedy identical to the host sampler, chi-square of
// >= 10k draws against the host sampler's exact distribution at several settings, penalties,
// masks and bias, seeds reproducible, logprobs within float tolerance.
#include "common.cuh"

#define NT 1024
#define NW (NT / 32)
#define MAX_TOP 20

typedef unsigned long long u64;

struct SampleRow {            // 128 bytes; offsets mirrored in gpu-sampler.ts
  u64 counts;                 // 0: int* [V] output-token counts (0 = no penalties)
  u64 promptMask;             // 8: unsigned* [ceil(V/32)] prompt tokens (0 = none)
  u64 allowMask;              // 16: unsigned* [ceil(V/32)] allowed tokens (0 = all)
  u64 biasIds;                // 24: int* [nBias]
  u64 biasVals;               // 32: float* [nBias]
  u64 seed;                   // 40
  u64 step;                   // 48: index of the token being sampled (0 = first)
  double invTemperature;      // 56: 1 / temperature (1 when greedy)
  double repetition;          // 64
  double frequency;           // 72
  double presence;            // 80
  float topP;                 // 88
  float minP;                 // 92
  int topK;                   // 96: <= 0 = off
  int numLogprobs;            // 100: -1 = no logprobs, else top logprobs 0..20
  int nBias;                  // 104
  int logitsRow;              // 108: row of the logits buffer
  int greedy;                 // 112
  int pad[3];                 // 116
};

__device__ __forceinline__ unsigned ord_key(float f) {
  const unsigned u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ bool bit_set(const unsigned* m, int i) {
  return (m[i >> 5] >> (i & 31)) & 1u;
}

/** Philox4x32-10 (Salmon et al. 2011): counter (step, 0), key seed. */
__device__ uint4 philox(u64 seed, u64 step) {
  unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
  unsigned c0 = (unsigned)step, c1 = (unsigned)(step >> 32), c2 = 0x5eedu, c3 = 0u;
#pragma unroll
  for (int r = 0; r < 10; r++) {
    const unsigned hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const unsigned hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return make_uint4(c0, c1, c2, c3);
}

struct Best {
  float v;
  int i;
};
__device__ __forceinline__ Best better(Best a, Best b) {
  return (b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a;
}

/** Block-wide argmax, ties to the lower index; every thread gets the result. */
__device__ Best block_best(Best b, Best* sm) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    Best c = {__shfl_xor_sync(0xffffffffu, b.v, o), __shfl_xor_sync(0xffffffffu, b.i, o)};
    b = better(b, c);
  }
  __syncthreads();
  if (lane == 0) sm[warp] = b;
  __syncthreads();
  b = lane < NW ? sm[lane] : Best{-INFINITY, 0x7fffffff};
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    Best c = {__shfl_xor_sync(0xffffffffu, b.v, o), __shfl_xor_sync(0xffffffffu, b.i, o)};
    b = better(b, c);
  }
  return b;
}

/** Block-wide exclusive prefix sum of v (in thread order); `total` gets the sum. */
__device__ u64 block_exclusive_scan(u64 v, u64* sm, u64* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  u64 x = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const u64 y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  __syncthreads();
  if (lane == 31) sm[warp] = x;
  __syncthreads();
  if (warp == 0) {
    u64 w = lane < NW ? sm[lane] : 0ull;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const u64 y = __shfl_up_sync(0xffffffffu, w, o);
      if (lane >= o) w += y;
    }
    if (lane < NW) sm[lane] = w;
  }
  __syncthreads();
  const u64 before = warp > 0 ? sm[warp - 1] : 0ull;
  *total = sm[NW - 1];
  return before + x - v;
}

__device__ __forceinline__ u64 mass_of(float x, float m) {
  const float w = __expf(x - m);
  return (u64)__double2ull_rd((double)w * 4294967296.0);
}

extern "C" __global__ void __launch_bounds__(NT)
    sample_rows(const SampleRow* rows, float* logits, int V, int* outIds, float* outLogprob,
                int* outTopIds, float* outTopLogprob) {
  const SampleRow p = rows[blockIdx.x];
  float* x = logits + (long long)p.logitsRow * V;
  const int tid = threadIdx.x;
  __shared__ Best smBest[NW];
  __shared__ u64 smScan[NW];
  __shared__ unsigned hist[256];
  __shared__ u64 histM[256];
  __shared__ float smSum[32];
  __shared__ unsigned bcast[4];
  __shared__ u64 bcast64[4];

  // 1. allowed-token mask, then the sparse logit bias.
  if (p.allowMask) {
    const unsigned* am = (const unsigned*)p.allowMask;
    for (int i = tid; i < V; i += NT)
      if (!bit_set(am, i)) x[i] = -INFINITY;
    __syncthreads();
  }
  if (p.nBias > 0) {
    const int* bi = (const int*)p.biasIds;
    const float* bv = (const float*)p.biasVals;
    for (int j = tid; j < p.nBias; j += NT) atomicAdd(x + bi[j], bv[j]);
    __syncthreads();
  }
  // 2. penalties and temperature, each rounded to float as the host's Float32Array stores are.
  const int* counts = (const int*)p.counts;
  const unsigned* pm = (const unsigned*)p.promptMask;
  Best best = {-INFINITY, 0x7fffffff};
  for (int i = tid; i < V; i += NT) {
    float v = x[i];
    if (counts) {
      const int c = counts[i];
      if (p.repetition != 1.0 && (c > 0 || (pm && bit_set(pm, i))))
        v = (float)(v > 0.f ? (double)v / p.repetition : (double)v * p.repetition);
      if (c > 0) v = (float)(((double)v - p.frequency * (double)c) - p.presence);
    }
    if (p.invTemperature != 1.0) v = (float)((double)v * p.invTemperature);
    x[i] = v;
    if (v > best.v) best = Best{v, i};
  }
  best = block_best(best, smBest);
  const float m = best.v;
  __syncthreads();

  // 3. log-sum-exp for logprobs.
  float lse = 0.f;
  if (p.numLogprobs >= 0) {
    float s = 0.f;
    for (int i = tid; i < V; i += NT) s += __expf(x[i] - m);
    lse = m + logf(block_sum(s, smSum));
  }

  int token = best.i;
  if (!p.greedy && m > -INFINITY) {
    const float floorW = p.minP > 0.f ? p.minP : 0.f;
    // eligible (min_p) count
    if (tid == 0) bcast[0] = 0;
    __syncthreads();
    {
      unsigned c = 0;
      for (int i = tid; i < V; i += NT) c += __expf(x[i] - m) >= floorW;
      atomicAdd(&bcast[0], c);
    }
    __syncthreads();
    const unsigned nElig = bcast[0];
    __syncthreads();

    // 4. top_k boundary: the topK-th largest key among eligible tokens (radix select).
    unsigned Kk = 0u, needEq = 0xffffffffu;
    if (p.topK > 0 && (unsigned)p.topK < nElig) {
      unsigned prefix = 0u, mask = 0u, need = (unsigned)p.topK;
      for (int shift = 24; shift >= 0; shift -= 8) {
        for (int b = tid; b < 256; b += NT) hist[b] = 0;
        __syncthreads();
        for (int i = tid; i < V; i += NT) {
          const float v = x[i];
          const unsigned key = ord_key(v);
          if ((key & mask) == prefix && __expf(v - m) >= floorW)
            atomicAdd(&hist[(key >> shift) & 255u], 1u);
        }
        __syncthreads();
        if (tid == 0) {
          unsigned cum = 0;
          int b = 255;
          for (; b > 0; b--) {
            if (cum + hist[b] >= need) break;
            cum += hist[b];
          }
          bcast[0] = prefix | ((unsigned)b << shift);
          bcast[1] = need - cum;
        }
        __syncthreads();
        prefix = bcast[0];
        need = bcast[1];
        mask |= 255u << shift;
        __syncthreads();
      }
      Kk = prefix;
      needEq = need;
    }
    // 5. mass of the k-set: tokens above the boundary, plus needEq of those on it.
    if (tid == 0) { bcast64[0] = 0; bcast[2] = 0; }
    __syncthreads();
    {
      u64 s = 0;
      unsigned c = 0;
      for (int i = tid; i < V; i += NT) {
        const float v = x[i];
        const unsigned key = ord_key(v);
        if (__expf(v - m) < floorW) continue;
        if (key > Kk) s += mass_of(v, m);
        else if (key == Kk) c++;
      }
      atomicAdd(&bcast64[0], s);
      atomicAdd(&bcast[2], c);
    }
    __syncthreads();
    const unsigned eqK = min(bcast[2], needEq);
    // the mass of one token on the boundary (all tied tokens share it)
    __shared__ float smKv;
    if (tid == 0) smKv = -INFINITY;
    __syncthreads();
    for (int i = tid; i < V; i += NT)
      if (ord_key(x[i]) == Kk) smKv = x[i];  // same value for all: a benign race
    __syncthreads();
    const u64 qBound = smKv == -INFINITY ? 0ull : mass_of(smKv, m);
    const u64 massK = bcast64[0] + (u64)eqK * qBound;

    // 6. top_p boundary within the k-set: radix select on mass, descending.
    unsigned Kp = Kk, nKeep = eqK;
    u64 kept = massK;
    if (p.topP < 1.f) {
      double target = (double)p.topP * (double)massK * (1.0 - 1e-12);
      if (target > (double)massK) target = (double)massK;
      unsigned prefix = 0u, mask = 0u;
      u64 above = 0ull;
      for (int shift = 24; shift >= 0; shift -= 8) {
        for (int b = tid; b < 256; b += NT) histM[b] = 0ull;
        __syncthreads();
        for (int i = tid; i < V; i += NT) {
          const float v = x[i];
          const unsigned key = ord_key(v);
          if ((key & mask) == prefix && key > Kk && __expf(v - m) >= floorW)
            atomicAdd(&histM[(key >> shift) & 255u], mass_of(v, m));
        }
        __syncthreads();
        if (tid == 0) {
          if ((Kk & mask) == prefix) histM[(Kk >> shift) & 255u] += (u64)eqK * qBound;
          int b = 255;
          for (; b > 0; b--) {
            if ((double)(above + histM[b]) >= target && histM[b] > 0) break;
            above += histM[b];
          }
          bcast[0] = prefix | ((unsigned)b << shift);
          bcast64[1] = above;
        }
        __syncthreads();
        prefix = bcast[0];
        above = bcast64[1];
        mask |= 255u << shift;
        __syncthreads();
      }
      Kp = prefix;
      // tokens tied on Kp (restricted to the k-set's ties when Kp is the top_k boundary)
      if (tid == 0) bcast[3] = 0;
      __syncthreads();
      for (int i = tid; i < V; i += NT) {
        const float v = x[i];
        if (ord_key(v) == Kp && __expf(v - m) >= floorW) {
          atomicAdd(&bcast[3], 1u);
          smKv = v;
        }
      }
      __syncthreads();
      unsigned cEq = bcast[3];
      if (Kp == Kk) cEq = min(cEq, needEq);
      const u64 qp = mass_of(smKv, m);
      unsigned n = cEq;
      if (qp > 0 && target > (double)above) {
        const double need = ceil((target - (double)above) / (double)qp);
        n = (unsigned)fmin(fmax(need, 1.0), (double)cEq);
      } else if (cEq > 0) {
        n = 1;
      }
      nKeep = n;
      kept = above + (u64)n * qp;
      __syncthreads();
    }

    // 7. one draw: u in [0, 1) with 53 bits, walked over kept tokens in id order.
    const uint4 r = philox(p.seed, p.step);
    const double u = ((double)(r.x >> 5) * 67108864.0 + (double)(r.y >> 6)) / 9007199254740992.0;
    const u64 want = (u64)(u * (double)kept);
    const int chunk = (V + NT - 1) / NT;
    const int lo = min(V, tid * chunk), hi = min(V, lo + chunk);
    unsigned ties = 0;
    for (int i = lo; i < hi; i++)
      ties += ord_key(x[i]) == Kp && __expf(x[i] - m) >= floorW;
    u64 tieTotal;
    unsigned tieRank = (unsigned)block_exclusive_scan(ties, smScan, &tieTotal);
    u64 s = 0;
    {
      unsigned tr = tieRank;
      for (int i = lo; i < hi; i++) {
        const float v = x[i];
        if (__expf(v - m) < floorW) continue;
        const unsigned key = ord_key(v);
        if (key > Kp) s += mass_of(v, m);
        else if (key == Kp && tr++ < nKeep) s += mass_of(v, m);
      }
    }
    u64 total;
    const u64 base = block_exclusive_scan(s, smScan, &total);
    if (tid == 0) bcast[0] = 0xffffffffu;
    __syncthreads();
    if (s > 0 && want >= base && want < base + s) {
      u64 cum = base;
      unsigned tr = tieRank;
      for (int i = lo; i < hi; i++) {
        const float v = x[i];
        if (__expf(v - m) < floorW) continue;
        const unsigned key = ord_key(v);
        u64 q = 0;
        if (key > Kp) q = mass_of(v, m);
        else if (key == Kp && tr++ < nKeep) q = mass_of(v, m);
        cum += q;
        if (q > 0 && cum > want) {
          bcast[0] = (unsigned)i;
          break;
        }
      }
    }
    __syncthreads();
    if (bcast[0] != 0xffffffffu) token = (int)bcast[0];
    __syncthreads();
  }

  // 8. top logprobs: n passes, each the best token after the previous in (value desc, id asc).
  if (p.numLogprobs > 0) {
    float pv = INFINITY;
    int pi = -1;
    for (int k = 0; k < p.numLogprobs && k < MAX_TOP; k++) {
      Best b = {-INFINITY, 0x7fffffff};
      for (int i = tid; i < V; i += NT) {
        const float v = x[i];
        if ((v < pv || (v == pv && i > pi)) && v > b.v) b = Best{v, i};
      }
      b = block_best(b, smBest);
      if (b.i == 0x7fffffff) {  // fewer finite tokens than asked: pad with -inf entries
        b.i = pi + 1;
      }
      if (tid == 0) {
        outTopIds[blockIdx.x * MAX_TOP + k] = b.i;
        outTopLogprob[blockIdx.x * MAX_TOP + k] = b.v - lse;
      }
      pv = b.v;
      pi = b.i;
      __syncthreads();
    }
  }
  if (tid == 0) {
    outIds[blockIdx.x] = token;
    outLogprob[blockIdx.x] = x[token] - lse;
    if (counts) ((int*)counts)[token] += 1;
  }
}
