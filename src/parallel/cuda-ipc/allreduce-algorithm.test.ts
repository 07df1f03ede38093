import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rankOrderSum, roundToBf16 } from '../reduction-semantics.js';
import {
  chooseAllReduce,
  ONE_SHOT_MAX_BYTES,
  packWidth,
  twoShotSlices,
} from './allreduce-algorithm.js';

/** The CPU definition (reduction-semantics.ts) of element i, rounded once to bf16. */
function definition(parts: readonly Float32Array[], i: number): number {
  return roundToBf16(rankOrderSum(parts, i));
}

/** Two-shot on the host: each rank reduces its slice (in `order`), then every rank gathers. */
function twoShot(parts: readonly Float32Array[], order: (owner: number) => number[]): Float32Array {
  const W = parts.length;
  const n = parts[0]!.length;
  const out = new Float32Array(n);
  twoShotSlices(n, W, packWidth(2)).forEach((sl, owner) => {
    const ranks = order(owner);
    for (let i = sl.start; i < sl.end; i++) {
      let s = parts[ranks[0]!]![i]!;
      for (const q of ranks.slice(1)) s = Math.fround(s + parts[q]![i]!);
      out[i] = roundToBf16(s);
    }
  });
  return out;
}

const inOrder = (W: number) => (): number[] => Array.from({ length: W }, (_, q) => q);
/** What a ring reduce-scatter does: the owner's chunk starts at the next rank. */
const rotated =
  (W: number) =>
  (owner: number): number[] =>
    Array.from({ length: W }, (_, k) => (owner + 1 + k) % W);

describe('one-shot or two-shot', () => {
  it('takes one-shot up to the named threshold, two-shot above, overridable', () => {
    expect(chooseAllReduce(ONE_SHOT_MAX_BYTES)).toBe('one-shot');
    expect(chooseAllReduce(ONE_SHOT_MAX_BYTES + 1)).toBe('two-shot');
    expect(chooseAllReduce(1000, 0)).toBe('two-shot');
    expect(chooseAllReduce(1e9, Infinity)).toBe('one-shot');
  });
});

describe('two-shot slices', () => {
  it('cover [0, n) once, in order, starting on whole packs', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 70_000 }), fc.integer({ min: 2, max: 8 }), (n, W) => {
        for (const V of [1, 4, 8]) {
          const sl = twoShotSlices(n, W, V);
          expect(sl).toHaveLength(W);
          expect(sl[0]!.start).toBe(0);
          expect(sl[W - 1]!.end).toBe(n);
          sl.forEach((s, q) => {
            expect(s.start % V).toBe(0);
            expect(s.end).toBeGreaterThanOrEqual(s.start);
            if (q > 0) expect(s.start).toBe(sl[q - 1]!.end);
            if (q < W - 1) expect(s.end % V).toBe(0);
          });
        }
      }),
    );
  });

  it('puts the sub-pack tail on the last rank (hidden 6144: no tail)', () => {
    expect(twoShotSlices(6144, 8, 8).map((s) => s.end - s.start)).toEqual(Array(8).fill(768));
    expect(twoShotSlices(7, 2, 8)).toEqual([
      { start: 0, end: 0 },
      { start: 0, end: 7 },
    ]);
    expect(twoShotSlices(20, 2, 8)).toEqual([
      { start: 0, end: 8 },
      { start: 8, end: 20 },
    ]);
  });
});

describe('order of summation', () => {
  // Ranks 0 and 1 hold ±2^20 that cancel exactly in rank order; the others small values that a
  // sum starting elsewhere adds to 2^20 first, losing their low bits.
  function adversarial(W: number, n: number, seed: number): Float32Array[] {
    let s = seed >>> 0;
    const rnd = (): number => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    const big = Float32Array.from({ length: n }, () => (rnd() < 0.5 ? -1 : 1) * 2 ** 20);
    return Array.from({ length: W }, (_, q) =>
      Float32Array.from({ length: n }, (_, i) =>
        q === 0 ? big[i]! : q === 1 ? -big[i]! : roundToBf16((rnd() - 0.5) * 3),
      ),
    );
  }

  it('two-shot in rank order equals the one-shot definition on every element', () => {
    for (const W of [2, 4, 8]) {
      const parts = adversarial(W, 6144 + 5, W);
      const got = twoShot(parts, inOrder(W));
      for (let i = 0; i < got.length; i++) expect(got[i]).toBe(definition(parts, i));
    }
  });

  it('a rotated (ring) order gives other bits, so a kernel that rotates fails the GPU check', () => {
    for (const W of [4, 8]) {
      const parts = adversarial(W, 6144, 100 + W);
      const ring = twoShot(parts, rotated(W));
      let differ = 0;
      for (let i = 0; i < ring.length; i++) if (ring[i] !== definition(parts, i)) differ++;
      expect(differ).toBeGreaterThan(0);
    }
  });
});
