import { describe, expect, it } from 'vitest';
import type { ForwardBatch } from '../backend/forward-batch.js';
import { FakeModelRunner } from './fake-model-runner.js';
import { HostSamplingRunner } from './host-sampling-runner.js';
import { LlmEngine } from './llm-engine.js';
import type { RowSampling, StepResult, StepRunner } from './step-runner.js';
import { makeRequest, randomPrompt } from './test-helpers.js';

/** A host runner that waits like a device (a macrotask per step) and counts its steps. */
class DeviceLikeRunner extends HostSamplingRunner implements StepRunner {
  override readonly overlapsHost: boolean = true;
  launched = 0;
  override async step(
    batch: ForwardBatch,
    rows: readonly (RowSampling | null)[],
    ready?: Promise<void>,
  ): Promise<StepResult> {
    this.launched++;
    const out = super.step(batch, rows, ready);
    await new Promise<void>((r) => setImmediate(r));
    return out;
  }
}

async function run(runner: StepRunner): Promise<number[][]> {
  const engine = new LlmEngine(runner, { checkIntegrity: true });
  const reqs = [0, 1, 2].map((i) =>
    makeRequest(`r${i}`, randomPrompt(i, 5 + 3 * i, 64), { maxTokens: 10 + i, ignoreEos: true }),
  );
  const out = await Promise.all(
    reqs.map(async (r) => {
      const ids: number[] = [];
      for await (const ev of engine.generate(r)) if (ev.type === 'token') ids.push(ev.tokenId);
      return ids;
    }),
  );
  await engine.shutdown();
  return out;
}

/** The same runner declaring a synchronous forward: the engine yields between steps. */
class SyncCountingRunner extends DeviceLikeRunner {
  override readonly overlapsHost: boolean = false;
}

describe('LlmEngine with a runner that overlaps the host', () => {
  it('gives the tokens of the plain loop', async () => {
    const plain = await run(new HostSamplingRunner(new FakeModelRunner({ vocabSize: 64 })));
    const overlapped = await run(new DeviceLikeRunner(new FakeModelRunner({ vocabSize: 64 })));
    expect(overlapped).toEqual(plain);
  });

  it("launches step N+1 before step N's token reaches the consumer (not when synchronous)", async () => {
    const launchedAtToken = async (runner: DeviceLikeRunner) => {
      const engine = new LlmEngine(runner);
      const seen: number[] = [];
      const req = makeRequest('one', randomPrompt(7, 6, 64), { maxTokens: 10, ignoreEos: true });
      for await (const ev of engine.generate(req))
        if (ev.type === 'token') seen.push(runner.launched);
      await engine.shutdown();
      return seen;
    };
    const fake = () => new FakeModelRunner({ vocabSize: 64 });
    expect(await launchedAtToken(new DeviceLikeRunner(fake()))).toEqual([
      2, 3, 4, 5, 6, 7, 8, 9, 10, 10,
    ]);
    expect(await launchedAtToken(new SyncCountingRunner(fake()))).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
    ]);
  });
});

describe('LlmEngine and the runner limits', () => {
  it('refuses more top logprobs than the runner returns, with a clear error', async () => {
    class Top20 extends HostSamplingRunner {
      override readonly maxTopLogprobs = 20;
    }
    const engine = new LlmEngine(new Top20(new FakeModelRunner({ vocabSize: 64 })));
    const events = [];
    for await (const ev of engine.generate(makeRequest('x', [1, 2], { logprobs: 21 })))
      events.push(ev);
    expect(events).toEqual([
      { type: 'error', message: 'logprobs must be an integer in [0, 20], got 21' },
    ]);
    await engine.shutdown();
  });
});
