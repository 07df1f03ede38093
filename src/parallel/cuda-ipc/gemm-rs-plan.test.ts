import { describe, expect, it } from 'vitest';
import { allReduceRows, roundToBf16 } from '../reduction-semantics.js';
import { gemmRsChunks, smallestGemmRsBlock } from './gemm-rs-plan.js';

/** Deterministic bf16 values of magnitude 2^-4..2^3, both signs (sums depend on order). */
function data(n: number, seed: number): Float32Array {
  let s = (seed * 2654435761 + 1) >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return roundToBf16(((s >>> 8) / 2 ** 24 - 0.5) * 2 ** ((s & 7) - 3));
  });
}

/** rows [start, start + rows) of x [*, K] · w [N, K]ᵀ into out (float32 sum, one bf16 rounding). */
function gemmRows(
  out: Float32Array,
  x: Float32Array,
  w: Float32Array,
  N: number,
  K: number,
  start: number,
  rows: number,
) {
  for (let i = start; i < start + rows; i++)
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++) s = Math.fround(s + Math.fround(x[i * K + k]! * w[j * K + k]!));
      out[i * N + j] = roundToBf16(s);
    }
}

/**
 * The whole schedule on the host, as the CUDA path runs it: each rank's chunks in plan order
 * into its `all` (pad rows left as they were), peer blocks pushed into slot `rank` of the
 * owner's tmp, own block read in place, then the owner's rank-order float32 sum.
 */
function gemmRs(W: number, M: number, n: number, N: number, K: number) {
  const x = Array.from({ length: W }, (_, r) => data(M * K, 10 + r));
  const w = Array.from({ length: W }, (_, r) => data(N * K, 50 + r));
  const pad = Array.from({ length: W }, (_, r) => data(W * n * N, 90 + r)); // pad rows' contents
  const all = pad.map((p) => p.slice());
  const tmp = Array.from({ length: W }, () => new Float32Array(W * n * N).fill(NaN));
  const block = n * N;
  for (let r = 0; r < W; r++)
    for (const c of gemmRsChunks(M, n, W, r)) {
      gemmRows(all[r]!, x[r]!, w[r]!, N, K, c.start, c.rows);
      if (c.dest !== r)
        tmp[c.dest]!.set(all[r]!.subarray(c.start * N, c.start * N + block), r * block);
    }
  const got = Array.from({ length: W }, (_, d) => {
    const slots = Array.from({ length: W }, (_, q) =>
      q === d
        ? all[d]!.subarray(d * block, (d + 1) * block)
        : tmp[d]!.subarray(q * block, (q + 1) * block),
    );
    return allReduceRows(slots, 'bf16');
  });
  // The reference: one GEMM of all M rows per rank, then reduce-scatter by the definition.
  const full = pad.map((p, r) => {
    const a = p.slice();
    gemmRows(a, x[r]!, w[r]!, N, K, 0, M);
    return a;
  });
  const sum = allReduceRows(full, 'bf16');
  const want = Array.from({ length: W }, (_, d) => sum.subarray(d * block, (d + 1) * block));
  return { got, want, all, full };
}

describe('GEMM + reduce-scatter plan', () => {
  it('puts every rank’s own block last and sends to W different ranks at every step', () => {
    for (let W = 2; W <= 8; W++) {
      const plans = Array.from({ length: W }, (_, r) => gemmRsChunks(W * 3, 3, W, r));
      for (let r = 0; r < W; r++) {
        expect(plans[r]!.map((c) => c.dest).sort()).toEqual([...Array(W).keys()]);
        expect(plans[r]![W - 1]!.dest).toBe(r);
      }
      for (let s = 0; s < W; s++) expect(new Set(plans.map((p) => p[s]!.dest)).size).toBe(W);
    }
  });

  it('computes only real rows: blocks past M have none, the block holding M is cut', () => {
    expect(gemmRsChunks(5, 2, 4, 0)).toEqual([
      { dest: 1, start: 2, rows: 2 },
      { dest: 2, start: 4, rows: 1 },
      { dest: 3, start: 6, rows: 0 },
      { dest: 0, start: 0, rows: 2 },
    ]);
    expect(() => gemmRsChunks(9, 2, 4, 0)).toThrow(/do not fit/);
  });

  for (const [W, M, n] of [
    [2, 6, 3],
    [2, 5, 3],
    [4, 13, 4],
    [4, 3, 1],
    [8, 29, 4],
    [8, 32, 4],
  ] as const)
    it(`equals GEMM then reduce-scatter bit for bit: W=${W}, M=${M}, ${n} rows/rank`, () => {
      const { got, want, all, full } = gemmRs(W, M, n, 5, 7);
      for (let d = 0; d < W; d++) expect(got[d]).toEqual(want[d]);
      // The partial outputs too: the chunks wrote exactly the GEMM's rows, padding untouched.
      for (let r = 0; r < W; r++) expect(all[r]).toEqual(full[r]);
    });

  it('names the smallest non-empty block the blocked path would hand to matmul', () => {
    // 3001 rows in 8 blocks of 376: seven full, the last 369.
    expect(smallestGemmRsBlock(3001, 376, 8)).toBe(369);
    expect(smallestGemmRsBlock(100, 13, 8)).toBe(9);
    expect(smallestGemmRsBlock(1024, 128, 8)).toBe(128);
    // 5 rows in 4 blocks of 2: two full, one of 1, one empty (skipped).
    expect(smallestGemmRsBlock(5, 2, 4)).toBe(1);
    expect(smallestGemmRsBlock(0, 1, 2)).toBe(0);
  });
});
