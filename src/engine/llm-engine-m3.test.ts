import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { goldenCase } from '../../test/golden-dir.js';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
import { loadModel } from '../model/load-model.js';
import { runForward } from '../model/run-forward.js';
import type { EngineConfig } from './engine-config.js';
import type { GenerateRequest } from './engine-types.js';
import { LlmEngine } from './llm-engine.js';
import { HostSamplingRunner } from './host-sampling-runner.js';
import { M3ModelRunner } from './m3-model-runner.js';
import { collect, makeRequest, randomPrompt } from './test-helpers.js';

// The engine over the real MiniMax-M3 forward on the CPU backend (tiny golden checkpoint, MSA
// block size 4 = page size 4): the invariances must hold for real numerics, not only the fake.
const DIR = goldenCase('tiny-moe');

const model = existsSync(DIR) ? await loadModel(DIR, { backend: new CpuBackend() }) : null;

describe.skipIf(!existsSync(DIR))('LlmEngine on the tiny MiniMax-M3 (CPU)', () => {
  const runner = (numPages = 96) => new M3ModelRunner(model!, { numPages, maxModelLen: 256 });
  const engine = (cfg: Partial<EngineConfig> = {}, numPages?: number) =>
    new LlmEngine(new HostSamplingRunner(runner(numPages)), { checkIntegrity: true, ...cfg });
  const reqs: GenerateRequest[] = Array.from({ length: 6 }, (_, i) =>
    makeRequest(`m${i}`, randomPrompt(i, 5 + 7 * i, 256), { maxTokens: 12, ignoreEos: true }),
  );

  async function alone(rs: GenerateRequest[]): Promise<number[][]> {
    const out: number[][] = [];
    for (const r of rs) out.push((await collect(engine({ enablePrefixCaching: false }), r)).tokens);
    return out;
  }

  it('batched, chunked and preempted runs give the one-at-a-time greedy tokens', async () => {
    const ref = await alone(reqs);
    const batched = await Promise.all(reqs.map((r) => collect(engine(), r)));
    const shared = engine();
    const together = await Promise.all(reqs.map((r) => collect(shared, r)));
    const chunkedEngine = engine({ maxNumBatchedTokens: 5 });
    const chunked = await Promise.all(reqs.map((r) => collect(chunkedEngine, r)));
    const tight = engine({}, 14);
    const preempted = await Promise.all(reqs.map((r) => collect(tight, r)));
    expect(batched.map((g) => g.tokens)).toEqual(ref);
    expect(together.map((g) => g.tokens)).toEqual(ref);
    expect(chunked.map((g) => g.tokens)).toEqual(ref);
    expect(preempted.map((g) => g.tokens)).toEqual(ref);
    expect(tight.stats().numPreemptions).toBeGreaterThan(0);
    expect(tight.stats().kvPagesUsed).toBe(0);
  });

  it('gives the same tokens on a prefix-cache hit', async () => {
    const base = reqs[5]!;
    const longer = { ...base, id: 'longer', promptIds: [...base.promptIds, 3, 1, 4] };
    const [ref] = await alone([longer]);
    const e = engine();
    await collect(e, base);
    const hit = await collect(e, longer);
    expect(hit.tokens).toEqual(ref);
    expect(hit.finish?.cachedTokens).toBe(40);
  });

  it('reports the routed experts of the position that produced each token', async () => {
    const req = { ...reqs[2]!, maxTokens: 5, returnRoutedExperts: true };
    const got = await collect(engine({ maxNumBatchedTokens: 6 }), req);
    const ids = [...req.promptIds, ...got.tokens];
    const ref = await runForward(model!, ids);
    got.tokenEvents.forEach((ev, i) => {
      const pos = req.promptIds.length + i - 1;
      for (const [layer, rows] of Object.entries(ref.routedExperts)) {
        expect(ev.routedExperts?.[layer]).toEqual(rows[pos]);
      }
    });
    expect(Object.keys(got.tokenEvents[0]!.routedExperts!)).toEqual(Object.keys(ref.routedExperts));
  });
});
