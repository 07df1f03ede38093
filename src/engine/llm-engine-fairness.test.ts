import { describe, expect, it } from 'vitest';
import type { EngineEvent } from './engine-types.js';
import { FakeModelRunner } from './fake-model-runner.js';
import { HostSamplingRunner } from './host-sampling-runner.js';
import { LlmEngine } from './llm-engine.js';
import { collect, makeRequest, randomPrompt } from './test-helpers.js';

const V = 64;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('LlmEngine fairness', () => {
  it("one request's many choices cannot keep another request waiting", async () => {
    const runner = new FakeModelRunner({ vocabSize: V, numPages: 256 });
    const e = new LlmEngine(new HostSamplingRunner(runner), {
      maxNumSeqs: 8,
      checkIntegrity: true,
    });
    const prompt = randomPrompt(1, 20, V);
    // 16 choices of one client request (one group), each 200 tokens, none stopping early.
    let bigTokens = 0;
    const big = Array.from({ length: 16 }, (_, i) =>
      collect(
        e,
        makeRequest(`big-${i}`, prompt, { group: 'big', maxTokens: 200, ignoreEos: true }),
        undefined,
        () => bigTokens++,
      ),
    );
    while (bigTokens < 40) await sleep(1);
    const before = bigTokens;
    const small = await collect(
      e,
      makeRequest('small', randomPrompt(2, 10, V), { maxTokens: 5, ignoreEos: true }),
    );
    const during = bigTokens - before;
    expect(small.tokens).toHaveLength(5);
    // First come first served, "small" would wait for 16 × 200 big tokens (it queues behind
    // 8 waiting choices); with the share cap it is admitted at once, by preempting a choice.
    expect(during).toBeLessThan(8 * 20);
    expect(e.stats().numPreemptions).toBeGreaterThan(0);
    const done = await Promise.all(big);
    for (const d of done) expect(d.tokens).toEqual(done[0]!.tokens);
    expect(done[0]!.tokens).toHaveLength(200);
    expect(e.stats().kvPagesUsed).toBe(0);
  });

  it('lets a lone request use every slot (the cap applies only while others wait)', async () => {
    const runner = new FakeModelRunner({ vocabSize: V, numPages: 256 });
    const e = new LlmEngine(new HostSamplingRunner(runner), { maxNumSeqs: 8 });
    const prompt = randomPrompt(3, 20, V);
    let maxRunning = 0;
    const runs = Array.from({ length: 8 }, (_, i) =>
      collect(e, makeRequest(`g-${i}`, prompt, { group: 'g', maxTokens: 30 }), undefined, () => {
        maxRunning = Math.max(maxRunning, e.stats().numRunning);
      }),
    );
    await Promise.all(runs);
    expect(maxRunning).toBe(8);
    expect(e.stats().numPreemptions).toBe(0);
  });
});

describe('LlmEngine backpressure', () => {
  it('pauses a sequence whose consumer stops reading, gives its pages back, and resumes it', async () => {
    const runner = new FakeModelRunner({ vocabSize: V, numPages: 128 });
    const e = new LlmEngine(new HostSamplingRunner(runner), {
      maxUnreadEvents: 32,
      pausePreemptMs: 50,
      checkIntegrity: true,
    });
    const req = makeRequest('stalled', randomPrompt(4, 12, V), { maxTokens: 400, ignoreEos: true });
    const ref = await collect(
      new LlmEngine(new HostSamplingRunner(new FakeModelRunner({ vocabSize: V, numPages: 128 }))),
      {
        ...req,
        id: 'ref',
      },
    );
    const it = e.generate(req)[Symbol.asyncIterator]();
    const first: EngineEvent[] = [(await it.next()).value as EngineEvent];
    // Meanwhile others are served; the stalled one stops at its buffer bound.
    const other = await collect(
      e,
      makeRequest('other', randomPrompt(5, 12, V), { maxTokens: 100 }),
    );
    expect(other.finish?.reason).toBeDefined();
    for (let t = 0; t < 500 && e.stats().numRunning > 0; t++) await sleep(10);
    const s = e.stats();
    expect(s.numRunning).toBe(0);
    expect(s.numWaiting).toBe(1);
    expect(s.kvPagesUsed).toBe(0);
    // Reading again resumes it (recomputed after the preemption) with the same tokens.
    const rest: EngineEvent[] = [];
    for (let r = await it.next(); !r.done; r = await it.next()) rest.push(r.value);
    const tokens = [...first, ...rest].flatMap((ev) => (ev.type === 'token' ? [ev.tokenId] : []));
    expect(tokens).toEqual(ref.tokens);
    expect(tokens.length).toBeGreaterThan(200); // far past the 32-event buffer
    await e.whenIdle();
    expect(e.stats().kvPagesUsed).toBe(0);
  });
});
