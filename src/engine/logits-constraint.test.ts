import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
import { loadModel } from '../model/load-model.js';
import { runForward } from '../model/run-forward.js';
import type { SamplingParams } from './engine-types.js';
import { FakeModelRunner } from './fake-model-runner.js';
import { HostSamplingRunner } from './host-sampling-runner.js';
import { LlmEngine } from './llm-engine.js';
import {
  applyTokenMask,
  countAllowed,
  type LogitsConstraint,
  maskAllows,
  maskOf,
} from './logits-constraint.js';
import { logSumExp } from './logits-processing.js';
import { M3ModelRunner } from './m3-model-runner.js';
import { SequenceSampler } from './sampler.js';
import { collect, GREEDY, makeRequest, randomPrompt } from './test-helpers.js';

const RANDOM: SamplingParams = { ...GREEDY, temperature: 1, seed: 3 };

/** Allows exactly `script[i]` at step i, then terminates. */
class ScriptConstraint implements LogitsConstraint {
  private i = 0;
  prepared = 0;
  constructor(
    private readonly vocab: number,
    private readonly script: readonly (readonly number[])[],
  ) {}
  nextTokenMask(): Uint32Array {
    return maskOf(this.vocab, this.script[this.i]!);
  }
  accept(t: number): void {
    if (!this.script[this.i]!.includes(t)) throw new Error(`token ${t} not allowed`);
    this.i++;
  }
  isTerminated(): boolean {
    return this.i === this.script.length;
  }
  prepare(): Promise<void> {
    this.prepared++;
    return Promise.resolve();
  }
}

describe('token mask and logit_bias in the host sampler', () => {
  it('maskOf / maskAllows / applyTokenMask agree, including a partial last word', () => {
    const V = 70;
    const ids = [0, 5, 31, 32, 63, 64, 69];
    const mask = maskOf(V, ids);
    expect(mask.length).toBe(3);
    for (let t = 0; t < V; t++) expect(maskAllows(mask, t)).toBe(ids.includes(t));
    const x = Float32Array.from({ length: V }, (_, i) => i / 10);
    expect(applyTokenMask(x, mask)).toBe(ids.length);
    for (let t = 0; t < V; t++)
      expect(x[t]).toBe(ids.includes(t) ? Math.fround(t / 10) : -Infinity);
    expect(() => applyTokenMask(new Float32Array(70), new Uint32Array(2))).toThrow(/words/);
  });

  it('greedy and random sampling only pick allowed tokens; logprobs renormalise over them', () => {
    const V = 50;
    const row = Float32Array.from({ length: V }, (_, i) => Math.sin(i) * 3);
    const allowed = [7, 19, 44];
    const mask = maskOf(V, allowed);
    const g = new SequenceSampler(GREEDY, []).sample(row, 5, mask);
    const best = allowed.reduce((a, b) => (row[b]! > row[a]! ? b : a));
    expect(g.tokenId).toBe(best);
    const masked = Float32Array.from(allowed, (t) => row[t]!);
    expect(g.logprob).toBeCloseTo(row[best]! - logSumExp(masked), 5);
    expect(g.topLogprobs!.map((t) => t.tokenId).sort((a, b) => a - b)).toEqual(
      [...allowed, ...g.topLogprobs!.slice(3).map((t) => t.tokenId)].sort((a, b) => a - b),
    );
    expect(g.topLogprobs!.slice(3).every((t) => t.logprob === -Infinity)).toBe(true);
    const s = new SequenceSampler({ ...RANDOM, topK: 10, topP: 0.9 }, []);
    const seen = new Set(Array.from({ length: 200 }, () => s.sample(row, null, mask).tokenId));
    expect([...seen].every((t) => allowed.includes(t))).toBe(true);
    expect(seen.size).toBeGreaterThan(1);
    expect(() => new SequenceSampler(GREEDY, []).sample(row, null, new Uint32Array(2))).toThrow(
      /allows no token/,
    );
  });

  it('adds logit_bias before penalties: +100 forces, -100 bans, and logprobs see the bias', () => {
    const V = 16;
    const row = Float32Array.from({ length: V }, (_, i) => i * 0.1);
    const forced = new SequenceSampler({ ...RANDOM, logitBias: [[3, 100]] }, []);
    expect(Array.from({ length: 20 }, () => forced.sample(row, null).tokenId)).toEqual(
      Array(20).fill(3),
    );
    const banned = new SequenceSampler({ ...GREEDY, logitBias: [[15, -100]] }, []);
    expect(banned.sample(row, null).tokenId).toBe(14);
    const r = new SequenceSampler({ ...GREEDY, logitBias: [[2, 0.5]] }, []).sample(row, 0);
    const biased = Float32Array.from(row);
    biased[2] = biased[2]! + 0.5;
    expect(r.logprob).toBeCloseTo(biased[15]! - logSumExp(biased), 6);
    // Bias cannot lift a masked token.
    const m = new SequenceSampler({ ...GREEDY, logitBias: [[9, 100]] }, []);
    expect(m.sample(row, null, maskOf(V, [1, 2])).tokenId).toBe(2);
  });
});

describe('LlmEngine with a constraint', () => {
  const V = 64;
  it('follows the mask, finishes "stop" when it terminates, and prepares each sampled row', async () => {
    const e = new LlmEngine(new HostSamplingRunner(new FakeModelRunner({ vocabSize: V })), {
      checkIntegrity: true,
    });
    const c = new ScriptConstraint(V, [[10], [11, 12], [13]]);
    const got = await collect(
      e,
      makeRequest('c', randomPrompt(1, 9, V), { constraint: c, maxTokens: 10, ignoreEos: true }),
    );
    expect(got.tokens[0]).toBe(10);
    expect([11, 12]).toContain(got.tokens[1]);
    expect(got.tokens[2]).toBe(13);
    expect(got.finish?.reason).toBe('stop');
    expect(c.prepared).toBe(3);
  });

  it('ends only that request with an error when its constraint fails', async () => {
    const e = new LlmEngine(new HostSamplingRunner(new FakeModelRunner({ vocabSize: V })), {
      checkIntegrity: true,
    });
    const bad: LogitsConstraint = {
      nextTokenMask: () => null,
      accept: () => {
        throw new Error('boom');
      },
      isTerminated: () => false,
    };
    const [a, b] = await Promise.all([
      collect(e, makeRequest('a', [1, 2, 3], { constraint: bad })),
      collect(e, makeRequest('b', [1, 2, 3], { maxTokens: 4, ignoreEos: true })),
    ]);
    expect(a.error).toMatch(/logits constraint failed: boom/);
    expect(b.tokens.length).toBe(4);
  });

  it('rejects logit_bias ids outside the vocabulary', async () => {
    const e = new LlmEngine(new HostSamplingRunner(new FakeModelRunner({ vocabSize: V })));
    const got = await collect(
      e,
      makeRequest('x', [1, 2], { sampling: { ...GREEDY, logitBias: [[V, 1]] } }),
    );
    expect(got.error).toMatch(/logit_bias token id 64/);
  });
});

const model = await loadModel('models/moeserve-tiny-m3', { backend: new CpuBackend() });

describe('prompt logprobs on the bundled model (CPU)', () => {
  const engine = (maxNumBatchedTokens: number, numPages = 96) =>
    new LlmEngine(
      new HostSamplingRunner(new M3ModelRunner(model, { numPages, maxModelLen: 256 })),
      {
        checkIntegrity: true,
        maxNumBatchedTokens,
      },
    );

  it('equal the log-softmax of a direct forward, chunked, prefix-cached or not', async () => {
    const prompt = randomPrompt(7, 40, 3000);
    const ref = await runForward(model, prompt);
    const want = prompt.slice(1).map((t, i) => {
      const row = Float32Array.from(ref.logits[i]!);
      return { logprob: row[t]! - logSumExp(row), rank: 1 + row.filter((v) => v > row[t]!).length };
    });
    const e = engine(5);
    // Warm the prefix cache with the same prompt: the scoring request must not use it.
    await collect(e, makeRequest('warm', prompt, { maxTokens: 1 }));
    for (const maxTokens of [0, 3]) {
      const got = await collect(
        e,
        makeRequest(`p${maxTokens}`, prompt, { promptLogprobs: 2, maxTokens, ignoreEos: true }),
      );
      const ev = got.events.find((x) => x.type === 'prompt_logprobs');
      expect(got.events[0]).toBe(ev);
      if (ev?.type !== 'prompt_logprobs') throw new Error('no prompt_logprobs event');
      expect(ev.logprobs.map((l) => l.tokenId)).toEqual(prompt.slice(1));
      ev.logprobs.forEach((l, i) => {
        expect(Math.abs(l.logprob - want[i]!.logprob)).toBeLessThan(1e-4);
        expect(l.rank).toBe(want[i]!.rank);
        expect(l.top).toHaveLength(2);
        expect(l.top[0]!.logprob).toBeGreaterThanOrEqual(l.logprob);
      });
      expect(got.tokens).toHaveLength(maxTokens);
      expect(got.finish).toMatchObject({ reason: 'length', cachedTokens: 0 });
    }
  });
});

describe('countAllowed', () => {
  it('counts the allowed tokens below the vocabulary size, ignoring bits past it', () => {
    const V = 70;
    const ids = [0, 1, 31, 32, 63, 64, 69];
    const mask = maskOf(V, ids);
    expect(countAllowed(mask, V)).toBe(ids.length);
    mask[2] = 0xffffffff; // bits 64..95: only 64..69 are in the vocabulary
    expect(countAllowed(mask, V)).toBe(5 + 6);
    expect(countAllowed(new Uint32Array(3), V)).toBe(0);
    const x = new Float32Array(V);
    expect(countAllowed(mask, V)).toBe(applyTokenMask(x, mask));
  });
});
