import { describe, expect, it } from 'vitest';
import type { EngineConfig } from './engine-config.js';
import type { GenerateRequest } from './engine-types.js';
import { HostSamplingRunner } from './host-sampling-runner.js';
import { FakeModelRunner, type FakeModelRunnerOptions } from './fake-model-runner.js';
import { LlmEngine } from './llm-engine.js';
import { collect, GREEDY, makeRequest, randomPrompt } from './test-helpers.js';

const V = 64;

function engine(
  cfg: Partial<EngineConfig> = {},
  runner: Partial<FakeModelRunnerOptions> = {},
): { engine: LlmEngine; runner: FakeModelRunner } {
  const r = new FakeModelRunner({ vocabSize: V, ...runner });
  return {
    engine: new LlmEngine(new HostSamplingRunner(r), { checkIntegrity: true, ...cfg }),
    runner: r,
  };
}

/** Each request on its own fresh engine, without prefix caching: the reference outputs. */
async function alone(reqs: GenerateRequest[], runner: Partial<FakeModelRunnerOptions> = {}) {
  const out: number[][] = [];
  for (const req of reqs) {
    out.push((await collect(engine({ enablePrefixCaching: false }, runner).engine, req)).tokens);
  }
  return out;
}

function mixedRequests(n: number, o: Partial<GenerateRequest> = {}): GenerateRequest[] {
  return Array.from({ length: n }, (_, i) =>
    makeRequest(`r${i}`, randomPrompt(100 + i, 3 + ((i * 7) % 23), V), {
      maxTokens: 12 + (i % 5),
      ignoreEos: true,
      ...o,
    }),
  );
}

async function expectIdle(e: LlmEngine): Promise<void> {
  await e.whenIdle();
  const s = e.stats();
  expect([s.numRunning, s.numWaiting, s.kvPagesUsed]).toEqual([0, 0, 0]);
  e.checkIntegrity();
}

describe('LlmEngine invariance', () => {
  it('gives the same greedy tokens batched as one at a time', async () => {
    const reqs = mixedRequests(8);
    const ref = await alone(reqs);
    const { engine: e, runner } = engine();
    const got = await Promise.all(reqs.map((r) => collect(e, r)));
    expect(got.map((g) => g.tokens)).toEqual(ref);
    expect(Math.max(...runner.calls.map(([seqs]) => seqs))).toBeGreaterThan(4);
    await expectIdle(e);
  });

  it('gives the same seeded samples batched as one at a time', async () => {
    const sampling = { ...GREEDY, temperature: 0.9, topP: 0.95, presencePenalty: 0.3 };
    const reqs = mixedRequests(6).map((r, i) => ({
      ...r,
      sampling: { ...sampling, seed: 11 + i },
    }));
    const ref = await alone(reqs, { peak: 1 });
    const { engine: e } = engine({}, { peak: 1 });
    const got = await Promise.all(reqs.map((r) => collect(e, r)));
    expect(got.map((g) => g.tokens)).toEqual(ref);
    expect(new Set(ref.flat()).size).toBeGreaterThan(10); // really sampled, not near-greedy
  });

  it('gives the same tokens with chunked and whole prefill', async () => {
    const reqs = mixedRequests(5).map((r, i) => ({
      ...r,
      promptIds: randomPrompt(7 + i, 40 + i, V),
    }));
    const whole = engine({ maxNumBatchedTokens: 4096 });
    const chunked = engine({ maxNumBatchedTokens: 8 });
    const a = await Promise.all(reqs.map((r) => collect(whole.engine, r)));
    const b = await Promise.all(reqs.map((r) => collect(chunked.engine, r)));
    expect(b.map((g) => g.tokens)).toEqual(a.map((g) => g.tokens));
    expect(Math.max(...chunked.runner.calls.map(([, t]) => t))).toBeLessThanOrEqual(8);
    expect(Math.max(...whole.runner.calls.map(([, t]) => t))).toBeGreaterThan(40);
  });

  it('gives the same tokens on a prefix-cache hit as on a miss, and counts the hit', async () => {
    const shared = randomPrompt(5, 30, V);
    const first = makeRequest('a', shared, { maxTokens: 10 });
    const second = makeRequest('b', [...shared, 9, 8, 7], { maxTokens: 10 });
    const [refA, refB] = await alone([first, second]);
    const { engine: e, runner } = engine();
    const a = await collect(e, first);
    const before = runner.tokensProcessed;
    const b = await collect(e, second);
    expect([a.tokens, b.tokens]).toEqual([refA, refB]);
    expect(a.finish?.cachedTokens).toBe(0);
    expect(b.finish?.cachedTokens).toBe(28); // 7 full pages of 4
    expect(runner.tokensProcessed - before).toBe(33 - 28 + b.tokens.length - 1);
    expect(e.stats().prefixCacheHitTokens).toBe(28);
    expect(e.stats().promptTokensTotal).toBe(63);
    expect(e.stats().kvPagesCached).toBeGreaterThan(0);
    await expectIdle(e);
  });

  it('shares the prompt between n identical requests submitted together', async () => {
    const prompt = randomPrompt(9, 21, V);
    const reqs = [0, 1, 2, 3].map((i) =>
      makeRequest(`n${i}`, prompt, { sampling: { ...GREEDY, temperature: 1, seed: i } }),
    );
    const ref = await alone(reqs);
    const { engine: e } = engine();
    const got = await Promise.all(reqs.map((r) => collect(e, r)));
    expect(got.map((g) => g.tokens)).toEqual(ref);
    expect(got.map((g) => g.finish?.cachedTokens)).toEqual([0, 20, 20, 20]);
  });

  it('preempts under a tiny page pool and still gives identical outputs, without leaks', async () => {
    const reqs = mixedRequests(6, { maxTokens: 24 });
    const ref = await alone(reqs, { numPages: 16 });
    const { engine: e } = engine({}, { numPages: 16 });
    const got = await Promise.all(reqs.map((r) => collect(e, r)));
    expect(got.map((g) => g.tokens)).toEqual(ref);
    expect(e.stats().numPreemptions).toBeGreaterThan(0);
    await expectIdle(e);
  });
});

describe('LlmEngine requests', () => {
  it('runs 32 concurrent requests to completion', async () => {
    const reqs = mixedRequests(32, { maxTokens: 20 });
    const { engine: e } = engine({ maxNumSeqs: 16 }, { numPages: 96 });
    const got = await Promise.all(reqs.map((r) => collect(e, r)));
    expect(got.every((g) => g.finish?.reason === 'length' && g.tokens.length === 20)).toBe(true);
    const ref = await alone(reqs.slice(0, 4));
    expect(got.slice(0, 4).map((g) => g.tokens)).toEqual(ref);
    await expectIdle(e);
  });

  it('frees pages the moment a request is aborted', async () => {
    const { engine: e } = engine();
    const ctrls = [0, 1, 2].map(() => new AbortController());
    const reqs = mixedRequests(3, { maxTokens: 200 });
    const runs = reqs.map((r, i) =>
      collect(e, r, ctrls[i]!.signal, (n) => {
        if (n === 3 && i === 0) ctrls[0]!.abort();
      }),
    );
    const first = await runs[0]!;
    expect(first.finish).toMatchObject({ reason: 'abort', completionTokens: 3 });
    expect(e.stats().numRunning).toBe(2);
    for (const c of ctrls) c.abort();
    expect(e.stats().kvPagesUsed).toBe(0); // synchronously, before any step runs
    const rest = await Promise.all(runs.slice(1));
    expect(rest.map((g) => g.finish?.reason)).toEqual(['abort', 'abort']);
    await expectIdle(e);
  });

  it('frees pages when aborted during an asynchronous forward, or when the reader stops', async () => {
    const { engine: e } = engine({}, { delayMs: 2 });
    const ctrl = new AbortController();
    const a = collect(e, mixedRequests(1, { maxTokens: 100 })[0]!, ctrl.signal);
    setTimeout(() => ctrl.abort(), 1);
    const other = collect(e, makeRequest('other', [5, 6, 7], { maxTokens: 5, ignoreEos: true }));
    const stream = e.generate(makeRequest('reader', [4, 4], { maxTokens: 50, ignoreEos: true }));
    for await (const ev of stream) if (ev.type === 'token') break;
    expect((await a).finish?.reason).toBe('abort');
    expect((await other).tokens).toHaveLength(5);
    await expectIdle(e);
  });

  it('ends with finish reasons as OpenAI defines them', async () => {
    const { engine: e } = engine({ maxModelLen: 40 });
    const prompt = randomPrompt(1, 6, V);
    const free = await collect(e, makeRequest('free', prompt, { maxTokens: 30, ignoreEos: true }));
    const stopAt = free.tokens.findIndex((t, i) => free.tokens.indexOf(t) === i && i >= 2);
    const stopId = free.tokens[stopAt]!;
    const stop = await collect(
      e,
      makeRequest('s', prompt, { maxTokens: 30, ignoreEos: true, stopTokenIds: [stopId] }),
    );
    expect(stop.finish).toMatchObject({ reason: 'stop', completionTokens: stopAt + 1 });
    expect(stop.tokenEvents.at(-1)?.isStopToken).toBe(true);
    const eos = await collect(e, makeRequest('eos', prompt, { maxTokens: 30 }));
    const eosAt = free.tokens.indexOf(0);
    if (eosAt >= 0)
      expect(eos.finish).toMatchObject({ reason: 'stop', completionTokens: eosAt + 1 });
    else expect(eos.finish?.reason).toBe('length');
    const len = await collect(e, makeRequest('l', prompt, { maxTokens: 3, ignoreEos: true }));
    expect(len.finish).toMatchObject({ reason: 'length', completionTokens: 3, promptTokens: 6 });
    const ctx = await collect(
      e,
      makeRequest('c', randomPrompt(2, 35, V), { maxTokens: 100, ignoreEos: true }),
    );
    expect(ctx.finish).toMatchObject({ reason: 'length', completionTokens: 5 });
    const full = await collect(e, makeRequest('f', randomPrompt(3, 40, V), { maxTokens: 5 }));
    expect(full.finish).toMatchObject({ reason: 'length', completionTokens: 0 });
    const over = await collect(e, makeRequest('o', randomPrompt(3, 41, V)));
    expect(over.error).toMatch(/context limit of 40/);
    expect(over.finish).toBeUndefined();
  });

  it('stops on an EOS id from the runner unless ignoreEos', async () => {
    const { engine: e } = engine();
    // Find a prompt whose greedy continuation reaches EOS (token 0) early.
    let prompt: number[] = [];
    let at = -1;
    for (let seed = 0; at < 0; seed++) {
      prompt = randomPrompt(seed, 5, V);
      at = (
        await collect(e, makeRequest(`p${seed}`, prompt, { maxTokens: 40, ignoreEos: true }))
      ).tokens.indexOf(0);
    }
    const eos = await collect(e, makeRequest('eos', prompt, { maxTokens: 40 }));
    expect(eos.finish).toMatchObject({ reason: 'stop', completionTokens: at + 1 });
    expect(eos.tokens.at(-1)).toBe(0);
  });

  it('rejects invalid requests with an error event', async () => {
    const { engine: e } = engine({}, { numPages: 4 });
    const bad = async (r: GenerateRequest) => (await collect(e, r)).error;
    expect(await bad(makeRequest('e', []))).toMatch(/empty/);
    expect(await bad(makeRequest('v', [V]))).toMatch(/vocabulary/);
    expect(await bad(makeRequest('t', [1], { sampling: { ...GREEDY, topP: 2 } }))).toMatch(/top_p/);
    expect(await bad(makeRequest('m', [1], { maxTokens: -1 }))).toMatch(/max_tokens/);
    expect(await bad(makeRequest('k', [1, 2], { maxTokens: 100 }))).toMatch(/KV pages/);
    const dup = e.generate(makeRequest('d', [1], { maxTokens: 5 }))[Symbol.asyncIterator]();
    await dup.next();
    expect(await bad(makeRequest('d', [1]))).toMatch(/already in flight/);
    await dup.return?.();
  });

  it('returns logprobs and routed experts per token when asked', async () => {
    const req = makeRequest('x', randomPrompt(4, 30, V), {
      logprobs: 3,
      returnRoutedExperts: true,
      ignoreEos: true,
    });
    const whole = await collect(engine().engine, req);
    const chunked = await collect(engine({ maxNumBatchedTokens: 7 }).engine, req);
    for (const ev of whole.tokenEvents) {
      expect(ev.topLogprobs).toHaveLength(3);
      expect(ev.logprob).toBeLessThanOrEqual(0);
      expect(Object.keys(ev.routedExperts ?? {})).toEqual(['0', '1']);
      expect(ev.routedExperts?.['0']).toHaveLength(2);
    }
    expect(chunked.tokenEvents).toEqual(whole.tokenEvents);
    const plain = await collect(engine().engine, {
      ...req,
      logprobs: null,
      returnRoutedExperts: false,
    });
    expect(plain.tokenEvents[0]).toEqual({ type: 'token', tokenId: whole.tokens[0] });
  });

  it('finishes in-flight requests on shutdown and refuses new ones', async () => {
    const { engine: e } = engine({}, { delayMs: 1 });
    const running = collect(e, makeRequest('a', [1, 2, 3], { maxTokens: 10, ignoreEos: true }));
    await new Promise((r) => setTimeout(r, 3));
    const done = e.shutdown();
    expect((await collect(e, makeRequest('late', [1]))).error).toMatch(/shutting down/);
    await done;
    expect((await running).finish).toMatchObject({ reason: 'length', completionTokens: 10 });
    await expectIdle(e);
  });
});
