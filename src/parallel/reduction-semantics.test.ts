import { describe, expect, it } from 'vitest';
import { addRmsNormRows } from '../backend/cpu/ops/norm.js';
import { connectLocalGroup } from './cpu/local-group.js';
import { CpuTensor } from '../backend/cpu/cpu-tensor.js';
import {
  maxAbsDiff,
  parseReductionVariant,
  reduceAddNormRows,
  roundToBf16,
  type ReductionVariant,
} from './reduction-semantics.js';

/** Deterministic values of mixed magnitude (a residual grows to ~10s, partials ~1). */
function values(n: number, seed: number, scale: number): Float32Array {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return ((s / 4294967296) * 2 - 1) * scale;
  });
}

const D = 16;
const rows = 3;
const n = rows * D;
const weight = values(D, 99, 0.5);

function fused(partials: Float32Array[], residual: Float32Array, variant: ReductionVariant) {
  const r = residual.slice();
  const a = new Float32Array(n);
  reduceAddNormRows({
    partials,
    residual: r,
    out: a,
    weight,
    eps: 1e-6,
    variant,
    activation: 'f32',
  });
  return { r, a };
}

describe('the reduction definition (issue 5: exact residual arithmetic)', () => {
  it('rounds to bf16 to nearest even', () => {
    expect(roundToBf16(1)).toBe(1);
    expect(roundToBf16(1 + 2 ** -8)).toBe(1); // tie → even
    expect(roundToBf16(1 + 3 * 2 ** -8)).toBe(1 + 2 ** -6); // tie → even (up)
    expect(roundToBf16(1 + 2 ** -7)).toBe(1 + 2 ** -7);
    expect(Number.isNaN(roundToBf16(NaN))).toBe(true);
    expect(() => parseReductionVariant('nccl')).toThrow(/exact, bf16-vendor/);
  });

  it('is what the CPU communicator all-reduce then addRmsNorm compute, bit for bit', async () => {
    for (const W of [2, 3, 4]) {
      const partials = Array.from({ length: W }, (_, q) => values(n, 10 + q, 1.5));
      const residual = values(n, 1, 40);
      const { comms, close } = await connectLocalGroup(W, { timeoutMs: 10_000 });
      try {
        const bufs = partials.map((p) => new CpuTensor([rows, D], 'bf16', p.slice(), true));
        await Promise.all(comms.map((c, q) => c.allReduce(bufs[q]!)));
        for (const buf of bufs) {
          const r = residual.slice();
          const a = new Float32Array(n);
          addRmsNormRows(a, r, buf.data as Float32Array, weight, 1e-6);
          const f = fused(partials, residual, 'exact');
          expect(f.r).toEqual(r);
          expect(f.a).toEqual(a);
        }
      } finally {
        close();
      }
    }
  });

  it('the bf16 vendor-like variant strays from it by about a bf16 ulp of the residual', () => {
    const partials = [values(n, 3, 1.5), values(n, 4, 1.5)];
    const residual = values(n, 5, 40);
    const exact = fused(partials, residual, 'exact');
    const vendor = fused(partials, residual, 'bf16-vendor');
    const dr = maxAbsDiff(exact.r, vendor.r);
    expect(dr).toBeGreaterThan(0);
    // A few bf16 half-ulps (2^-9 relative) of |r + s| ≤ 43: r rounded, partials, the result.
    expect(dr).toBeLessThanOrEqual(4 * 2 ** -9 * 64);
    expect(maxAbsDiff(exact.a, vendor.a)).toBeGreaterThan(0);
    for (const v of vendor.r) expect(roundToBf16(v)).toBe(v); // the residual is kept in bf16
  });

  it('sums each chunk in ring order, so rank order is not the same as ring order', () => {
    // Three ranks, one element per chunk; bf16 partials whose sum depends on the order.
    const big = 256;
    const partials = [Float32Array.of(big, big, big), Float32Array.of(1, 1, 1)];
    partials.push(Float32Array.of(1, 1, 1));
    const r = new Float32Array(3);
    const a = new Float32Array(3);
    const w = new Float32Array(3);
    reduceAddNormRows({
      partials,
      residual: r,
      out: a,
      weight: w,
      eps: 1e-6,
      variant: 'bf16-vendor',
      activation: 'f32',
    });
    // chunk 0 starts at rank 1: (1 + 1) + 256 = 258; chunks 1, 2 add 256 + 1 = 256 (bf16) first.
    expect(Array.from(r)).toEqual([258, 256, 256]);
  });

  it('max diff counts a NaN on one side only as infinite', () => {
    expect(maxAbsDiff(Float32Array.of(1, NaN), Float32Array.of(1, 2))).toBe(Infinity);
    expect(maxAbsDiff(Float32Array.of(1, NaN), Float32Array.of(1.5, NaN))).toBe(0.5);
  });
});

describe('the sum stored in bf16 before the add (a bf16 backend’s unfused path)', () => {
  it('rounds Σh once to bf16, then r + that once to bf16; allReduceRows is that first rounding', async () => {
    const { allReduceRows } = await import('./reduction-semantics.js');
    const partials = [values(n, 1, 1), values(n, 2, 1), values(n, 3, 1)].map((p) =>
      p.map(roundToBf16),
    );
    const residual = values(n, 4, 8).map(roundToBf16);
    const s = allReduceRows(partials, 'bf16');
    const r = residual.slice();
    const a = new Float32Array(n);
    reduceAddNormRows({
      partials,
      residual: r,
      out: a,
      weight,
      eps: 1e-6,
      variant: 'exact',
      activation: 'bf16',
      sumRounding: 'bf16',
    });
    for (let i = 0; i < n; i++) {
      expect(s[i]).toBe(
        roundToBf16(
          Math.fround(Math.fround(partials[0]![i]! + partials[1]![i]!) + partials[2]![i]!),
        ),
      );
      expect(r[i]).toBe(roundToBf16(Math.fround(residual[i]! + s[i]!)));
    }
    // Without the sum rounding (the f32 definition) some residual differs: the option matters.
    const r32 = residual.slice();
    reduceAddNormRows({
      partials,
      residual: r32,
      out: new Float32Array(n),
      weight,
      eps: 1e-6,
      variant: 'exact',
      activation: 'bf16',
    });
    expect(maxAbsDiff(r, r32)).toBeGreaterThan(0);
  });
});

describe('allReduceRows (rank by rank into float32) equals rankOrderSum element by element', () => {
  it('bit for bit on mixed magnitudes, 2..8 ranks, both roundings', async () => {
    const { allReduceRows, rankOrderSum } = await import('./reduction-semantics.js');
    for (const W of [2, 3, 5, 8]) {
      const parts = Array.from({ length: W }, (_, q) =>
        values(4096, 10 + q, 1).map((v, i) => v * 2 ** (((i * 7 + q * 13) % 40) - 20)),
      );
      for (const to of ['f32', 'bf16'] as const) {
        const got = allReduceRows(parts, to);
        for (let i = 0; i < got.length; i++) {
          const s = rankOrderSum(parts, i);
          expect(got[i]).toBe(to === 'bf16' ? roundToBf16(s) : s);
        }
      }
    }
  });
});
