import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SamplingParams } from './engine-types.js';
import { truncate } from './logits-processing.js';
import { Rng } from './rng.js';
import { checkSamplingParams, SequenceSampler } from './sampler.js';

const GREEDY: SamplingParams = {
  temperature: 0,
  topP: 1,
  topK: -1,
  minP: 0,
  presencePenalty: 0,
  frequencyPenalty: 0,
  repetitionPenalty: 1,
  seed: 1,
};
const RANDOM: SamplingParams = { ...GREEDY, temperature: 1 };

const row = (xs: number[]) => Float32Array.from(xs);
const logits = fc
  .array(fc.float({ min: -8, max: 8, noNaN: true }), { minLength: 1, maxLength: 64 })
  .map(row);

function draws(p: SamplingParams, x: Float32Array, n: number): number[] {
  // A fresh sampler (and seed) per draw keeps the penalties' state out of it.
  return Array.from(
    { length: n },
    (_, seed) => new SequenceSampler({ ...p, seed }, []).sample(x, null).tokenId,
  );
}

/** The kept set by the definition: sort everything, then min_p, top_k, top_p. */
function referenceKept(x: Float32Array, topK: number, topP: number, minP: number): number[] {
  const ids = [...x.keys()].sort((a, b) => x[b]! - x[a]! || a - b);
  const m = x[ids[0]!]!;
  const w = (i: number) => Math.exp(x[i]! - m);
  let kept = ids.filter((i) => w(i) >= minP);
  if (topK > 0) kept = kept.slice(0, topK);
  const total = kept.reduce((s, i) => s + w(i), 0);
  let cum = 0;
  const out: number[] = [];
  for (const i of kept) {
    out.push(i);
    cum += w(i);
    // top_p = 1 keeps everything (OpenAI/vLLM): the slack below would otherwise drop a tail
    // whose weight is under 1e-12 of the total (fast-check seed 1087440451).
    if (topP < 1 && cum >= topP * total * (1 - 1e-12)) break;
  }
  return out;
}

describe('Rng', () => {
  it('is reproducible per seed and uniform in [0, 1)', () => {
    const a = new Rng(42);
    const b = new Rng(42);
    const xs = Array.from({ length: 1000 }, () => a.next());
    expect(xs).toEqual(Array.from({ length: 1000 }, () => b.next()));
    expect(new Rng(43).next()).not.toBe(xs[0]);
    expect(new Rng(2 ** 40).next()).not.toBe(new Rng(2 ** 40 + 2 ** 32).next());
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...xs)).toBeLessThan(1);
    const mean = xs.reduce((s, v) => s + v, 0) / xs.length;
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.05);
  });
});

describe('SequenceSampler', () => {
  it('top_k = 1 is greedy at any temperature', () => {
    fc.assert(
      fc.property(logits, fc.double({ min: 0.05, max: 5, noNaN: true }), (x, temperature) => {
        const greedy = new SequenceSampler(GREEDY, []).sample(x, null).tokenId;
        const k1 = new SequenceSampler({ ...RANDOM, temperature, topK: 1 }, []).sample(x, null);
        expect(k1.tokenId).toBe(greedy);
      }),
    );
  });

  it('top_k = 1 keeps the maximum when the temperature scale rounds it to a tie', () => {
    // fast-check's counterexample: 1.4e-45 * (1 / 2) rounds to 0 in float32.
    const x = Float32Array.from([0, 1.401298464324817e-45]);
    const k1 = new SequenceSampler({ ...RANDOM, temperature: 2, topK: 1 }, []).sample(x, null);
    expect(k1.tokenId).toBe(1);
  });

  it('greedy takes the first maximum', () => {
    expect(new SequenceSampler(GREEDY, []).sample(row([1, 3, 3, 2]), null).tokenId).toBe(1);
  });

  it('reproduces a seeded sequence exactly', () => {
    const x = row([0.5, 0.2, 0.1, 0.4, 0.3]);
    const run = (seed: number) => {
      const s = new SequenceSampler({ ...RANDOM, seed, presencePenalty: 0.1 }, [1, 2]);
      return Array.from({ length: 50 }, () => s.sample(x, null).tokenId);
    };
    expect(run(7)).toEqual(run(7));
    expect(run(7)).not.toEqual(run(8));
  });

  it('samples in proportion to the probabilities', () => {
    const x = row([Math.log(0.5), Math.log(0.3), Math.log(0.2)]);
    const s = new SequenceSampler({ ...RANDOM, seed: 3 }, []);
    const counts = [0, 0, 0];
    // Penalties are off, so one sampler can draw many times from the same distribution.
    for (let i = 0; i < 20_000; i++) counts[s.sample(x, null).tokenId]!++;
    expect(counts.map((c) => c / 20_000)).toEqual([
      expect.closeTo(0.5, 1),
      expect.closeTo(0.3, 1),
      expect.closeTo(0.2, 1),
    ]);
  });

  it('only samples from the top_p nucleus, top_k head and min_p band', () => {
    const x = row([3, 2, 1, 0]);
    const seen = (p: Partial<SamplingParams>) => new Set(draws({ ...RANDOM, ...p }, x, 300));
    expect(seen({ topP: 0.5 })).toEqual(new Set([0]));
    expect(seen({ topP: 0.8 })).toEqual(new Set([0, 1]));
    expect(seen({ topK: 2 })).toEqual(new Set([0, 1]));
    expect(seen({ minP: 0.3 })).toEqual(new Set([0, 1]));
    expect(seen({})).toEqual(new Set([0, 1, 2, 3]));
  });

  it('truncation matches the sort-everything definition', () => {
    const big = fc
      .integer({ min: 1, max: 3000 })
      .chain((n) =>
        fc.tuple(fc.constant(n), fc.double({ min: 0, max: 30, noNaN: true }), fc.integer()),
      );
    fc.assert(
      fc.property(
        fc.oneof(
          logits,
          big.map(([n, spread, seed]) => flat(n, spread, seed)),
        ),
        fc.integer({ min: -1, max: 70 }),
        fc.double({ min: 0.01, max: 1, noNaN: true }),
        fc.oneof(fc.constant(0), fc.double({ min: 0, max: 1, noNaN: true })),
        (x, topK, topP, minP) => {
          const got = truncate(x, { topK, topP, minP });
          const want = referenceKept(x, topK, topP, minP);
          // Keeping everything skips the sort: compare as sets.
          if (topP >= 1 && (topK <= 0 || topK >= x.length))
            expect([...got.ids].sort((a, b) => a - b)).toEqual([...want].sort((a, b) => a - b));
          else expect(got.ids).toEqual(want);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('applies presence, frequency and repetition penalties as defined', () => {
    const x = row([2, 1, -1, 0.5]);
    const p = { ...GREEDY, presencePenalty: 0.25, frequencyPenalty: 0.5 };
    const s = new SequenceSampler(p, []);
    expect(s.sample(x, null).tokenId).toBe(0); // 2 -> then 2 - 0.5 - 0.25 = 1.25
    expect(s.sample(x, null).tokenId).toBe(0); // 1.25 > 1; after: 2 - 1.0 - 0.25 = 0.75
    const r = s.sample(x, 4);
    expect(r.tokenId).toBe(1);
    const lp = new Map(r.topLogprobs!.map((e) => [e.tokenId, e.logprob]));
    expect(lp.get(0)! - lp.get(3)!).toBeCloseTo(0.75 - 0.5, 5);

    const rep = new SequenceSampler({ ...GREEDY, repetitionPenalty: 2 }, [0, 2]);
    const rr = rep.sample(x, 4);
    const lr = new Map(rr.topLogprobs!.map((e) => [e.tokenId, e.logprob]));
    expect(rr.tokenId).toBe(0); // 2/2 = 1 ties with token 1; the lower id wins
    expect(lr.get(0)! - lr.get(1)!).toBeCloseTo(0, 5);
    expect(lr.get(2)! - lr.get(3)!).toBeCloseTo(-2 - 0.5, 5); // -1 * 2
  });

  it('returns logprobs that sum to 1 and include the chosen token', () => {
    fc.assert(
      fc.property(
        logits,
        fc.double({ min: 0, max: 3, noNaN: true }),
        fc.nat(),
        (x, temperature, seed) => {
          const s = new SequenceSampler({ ...RANDOM, temperature, seed, topP: 0.9 }, []);
          const r = s.sample(x, x.length);
          const total = r.topLogprobs!.reduce((acc, e) => acc + Math.exp(e.logprob), 0);
          expect(total).toBeCloseTo(1, 5);
          const mine = r.topLogprobs!.find((e) => e.tokenId === r.tokenId)!;
          expect(r.logprob).toBe(mine.logprob);
          const lps = r.topLogprobs!.map((e) => e.logprob);
          expect(lps).toEqual([...lps].sort((a, b) => b - a));
        },
      ),
    );
  });

  it('validates its parameters', () => {
    expect(checkSamplingParams(GREEDY)).toBeNull();
    expect(checkSamplingParams({ ...GREEDY, temperature: -1 })).toMatch(/temperature/);
    expect(checkSamplingParams({ ...GREEDY, topP: 0 })).toMatch(/top_p/);
    expect(checkSamplingParams({ ...GREEDY, topK: 1.5 })).toMatch(/top_k/);
    expect(checkSamplingParams({ ...GREEDY, minP: 2 })).toMatch(/min_p/);
    expect(checkSamplingParams({ ...GREEDY, repetitionPenalty: 0 })).toMatch(/repetition/);
    expect(checkSamplingParams({ ...GREEDY, seed: 0.5 })).toMatch(/seed/);
  });
});

/** n logits spread over [0, spread] by a seeded generator, with many near-ties. */
function flat(n: number, spread: number, seed: number): Float32Array {
  const r = new Rng(Math.abs(seed));
  return Float32Array.from({ length: n }, () => Math.round(r.next() * 50) * (spread / 50));
}
