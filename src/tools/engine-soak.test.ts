import { describe, expect, it } from 'vitest';
import { FakeModelRunner } from '../engine/fake-model-runner.js';
import { LlmEngine } from '../engine/llm-engine.js';
import { runSoak } from './engine-soak.js';
import { HostSamplingRunner } from '../engine/host-sampling-runner.js';

describe('engine soak (short)', () => {
  it('returns to idle KV and heap after mixed load with aborts and preemption', async () => {
    const runner = new FakeModelRunner({
      vocabSize: 128,
      numPages: 20,
      pageSize: 8,
      maxModelLen: 160,
    });
    const engine = new LlmEngine(new HostSamplingRunner(runner), {
      maxNumSeqs: 8,
      maxNumBatchedTokens: 64,
      checkIntegrity: true,
    });
    const report = await runSoak(engine, runner.vocabSize, {
      seconds: 2,
      concurrency: 12,
      abortRate: 0.3,
      seed: 5,
      heapSlackMiB: 16,
    });
    expect(report.failures).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.finishCounts['abort']).toBeGreaterThan(0);
    expect(report.readerStopped).toBeGreaterThan(0);
    expect(report.numPreemptions).toBeGreaterThan(0);
    expect(report.prefixCacheHitTokens).toBeGreaterThan(0);
    await engine.shutdown();
  });
});
