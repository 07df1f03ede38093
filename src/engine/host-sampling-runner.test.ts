import { describe, expect, it } from 'vitest';
import type { ForwardBatch } from '../backend/forward-batch.js';
import { FakeModelRunner } from './fake-model-runner.js';
import { HostSamplingRunner } from './host-sampling-runner.js';
import { SequenceSampler } from './sampler.js';
import { GREEDY } from './test-helpers.js';

const V = 64;

function decodeBatch(tokens: number[], contexts: number[]): ForwardBatch {
  let page = 0;
  return {
    tokenIds: Int32Array.from(tokens),
    seqs: contexts.map((n) => ({
      numCached: n,
      numNew: 1,
      pageTable: Int32Array.from({ length: Math.ceil((n + 1) / 4) }, () => page++),
    })),
    pageSize: 4,
    logitsFor: 'last',
  };
}

describe('HostSamplingRunner (the step-runner contract on the host sampler)', () => {
  it('samples each requested row as SequenceSampler does on the same logits, and skips null rows', async () => {
    const fake = new FakeModelRunner({ vocabSize: V });
    const runner = new HostSamplingRunner(fake);
    const params = { ...GREEDY, temperature: 0.8, topK: 10, presencePenalty: 0.5 };
    const seqA = runner.openSampling(params, [1, 2, 3], 42);
    const seqB = runner.openSampling(GREEDY, [4], 7);
    const refA = new SequenceSampler(params, [1, 2, 3], 42);
    const refB = new SequenceSampler(GREEDY, [4], 7);
    for (let step = 0; step < 5; step++) {
      const batch = decodeBatch([step + 1, step + 2, step + 3], [0, 0, 0]);
      const logits = (await new FakeModelRunner({ vocabSize: V }).forward(batch)).logits;
      const out = await runner.step(batch, [
        { seq: seqA, numLogprobs: 2 },
        null,
        { seq: seqB, numLogprobs: null },
      ]);
      expect(out.samples[1]).toBeNull();
      expect(out.samples[0]).toEqual(refA.sample(logits.subarray(0, V), 2));
      expect(out.samples[2]).toEqual(refB.sample(logits.subarray(2 * V, 3 * V), null));
    }
  });

  it('never samples a token outside the allowed mask', async () => {
    const runner = new HostSamplingRunner(new FakeModelRunner({ vocabSize: V }));
    const seq = runner.openSampling({ ...GREEDY, temperature: 1.5 }, [1], 3);
    const mask = new Uint32Array(Math.ceil(V / 32));
    for (const t of [5, 40, 63]) mask[t >>> 5]! |= 1 << (t & 31);
    const seen = new Set<number>();
    for (let step = 0; step < 40; step++) {
      const out = await runner.step(decodeBatch([step % V], [0]), [
        { seq, numLogprobs: null, allowedMask: () => mask },
      ]);
      seen.add(out.samples[0]!.tokenId);
    }
    expect([...seen].every((t) => [5, 40, 63].includes(t))).toBe(true);
    expect(seen.size).toBeGreaterThan(1);
  });

  it('rejects a runner whose logits do not cover the rows', async () => {
    const runner = new HostSamplingRunner(new FakeModelRunner({ vocabSize: V }));
    const seq = runner.openSampling(GREEDY, [1], 1);
    await expect(
      runner.step(decodeBatch([1, 2], [0, 0]), [{ seq, numLogprobs: null }]),
    ).rejects.toThrow(/expected 64 logits|logits, expected/);
  });
});
