import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { GOLDEN_CASES, goldenCase } from '../../test/golden-dir.js';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
import { collect, makeRequest, randomPrompt } from '../engine/test-helpers.js';
import { HostSamplingRunner } from '../engine/host-sampling-runner.js';
import { LlmEngine } from '../engine/llm-engine.js';
import { M3ModelRunner } from '../engine/m3-model-runner.js';
import { compareGolden, type GoldenExpect } from './golden-compare.js';
import { loadModel } from './load-model.js';
import { runForward } from './run-forward.js';

// Every kernel split over the threads, however small (minParallelFlops 0).
const backends: CpuBackend[] = [];
const backend = (threads: number): CpuBackend => {
  const b = new CpuBackend({ threads, minParallelFlops: 0 });
  backends.push(b);
  return b;
};
afterAll(() => backends.forEach((b) => b.close()));

describe('CPU backend on 1 and 2 threads: the same bits', () => {
  for (const name of GOLDEN_CASES) {
    it(`${name}: golden logits identical at --cpu-threads 1 and 2, within the golden rule`, async () => {
      const dir = goldenCase(name);
      const exp = JSON.parse(readFileSync(`${dir}/expect.json`, 'utf8')) as GoldenExpect;
      const [one, two] = await Promise.all(
        [1, 2].map(async (t) => runForward(await loadModel(dir, { backend: backend(t) }), exp.ids)),
      );
      expect(two!.logits).toEqual(one!.logits);
      expect(two!.routedExperts).toEqual(one!.routedExperts);
      const report = compareGolden(exp, two!);
      expect(report.problems).toEqual([]);
      expect(report.maxAbsDiff).toBeLessThan(1e-4);
    });
  }

  for (const name of GOLDEN_CASES) {
    it(`${name}: outputs taken uninitialized are written whole (NaN-filled, the same logits)`, async () => {
      const dir = goldenCase(name);
      const exp = JSON.parse(readFileSync(`${dir}/expect.json`, 'utf8')) as GoldenExpect;
      const poisoned = new CpuBackend({
        threads: 2,
        minParallelFlops: 0,
        poisonUninitialized: true,
      });
      backends.push(poisoned);
      const [plain, nan] = await Promise.all(
        [backend(1), poisoned].map(async (b) =>
          runForward(await loadModel(dir, { backend: b }), exp.ids),
        ),
      );
      expect(nan!.logits.flat().every((v) => Number.isFinite(v))).toBe(true);
      expect(nan!.logits).toEqual(plain!.logits);
    });
  }

  it('engine invariances hold on 2 threads: batched, chunked and preempted runs give the 1-thread tokens', async () => {
    const dir = goldenCase('tiny-moe');
    const reqs = Array.from({ length: 4 }, (_, i) =>
      makeRequest(`m${i}`, randomPrompt(i, 5 + 9 * i, 256), { maxTokens: 10, ignoreEos: true }),
    );
    const engine = async (threads: number, numPages: number, maxNumBatchedTokens?: number) =>
      new LlmEngine(
        new HostSamplingRunner(
          new M3ModelRunner(await loadModel(dir, { backend: backend(threads) }), {
            numPages,
            maxModelLen: 256,
          }),
        ),
        { checkIntegrity: true, ...(maxNumBatchedTokens ? { maxNumBatchedTokens } : {}) },
      );
    const ref: number[][] = [];
    for (const r of reqs) ref.push((await collect(await engine(1, 96), r)).tokens);
    const two = await engine(2, 96);
    const batched = await Promise.all(reqs.map((r) => collect(two, r)));
    const chunkedEngine = await engine(2, 96, 5);
    const chunked = await Promise.all(reqs.map((r) => collect(chunkedEngine, r)));
    const tight = await engine(2, 14);
    const preempted = await Promise.all(reqs.map((r) => collect(tight, r)));
    expect(batched.map((g) => g.tokens)).toEqual(ref);
    expect(chunked.map((g) => g.tokens)).toEqual(ref);
    expect(preempted.map((g) => g.tokens)).toEqual(ref);
  });
});
