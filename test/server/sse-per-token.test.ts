import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ssePost } from '../../src/bench/sse-post.js';
import { BUNDLED_MODEL_DIR } from '../../src/cli/serve-command.js';
import type { ForwardBatch } from '../../src/backend/forward-batch.js';
import { FakeModelRunner } from '../../src/engine/fake-model-runner.js';
import { HostSamplingRunner } from '../../src/engine/host-sampling-runner.js';
import { LlmEngine } from '../../src/engine/llm-engine.js';
import type { StepOutput } from '../../src/engine/model-runner.js';
import { createServer } from '../../src/server/http-server.js';
import { serveModel, type ServedModel } from '../serve-model.js';
import { fakeChatTemplate, fakeTokenizer } from './fake-text.js';

// Issue 11: each engine step's token reaches its client as its own SSE event. The CPU forward
// is synchronous, so this only holds because the engine yields to the event loop between
// steps (the CUDA runner additionally waits for the GPU without blocking it).
let served: ServedModel;
beforeAll(async () => {
  served = await serveModel(BUNDLED_MODEL_DIR);
});
afterAll(async () => served?.close());

const N = 48;

/**
 * Gaps between consecutive token events shorter than 0.1 ms: tokens that were written in one
 * burst (Node's HTTP client still splits them into one 'data' event per chunk, so arrival
 * times alone do not show a burst; the gap does, as a step takes milliseconds).
 */
function burstGaps(times: number[]): number {
  let n = 0;
  for (let i = 1; i < times.length; i++) if (times[i]! - times[i - 1]! < 0.1) n++;
  return n;
}

/** A model whose forward blocks the thread for 2 ms, as a synchronous device wait would. */
class BlockingRunner extends FakeModelRunner {
  override forward(batch: ForwardBatch): StepOutput {
    const until = performance.now() + 2;
    while (performance.now() < until);
    return super.forward(batch) as StepOutput;
  }
}

async function arrivalTimes(
  url: string,
  prompt: string,
): Promise<{ tokens: number; times: number[] }> {
  const times: number[] = [];
  let tokens = 0;
  await ssePost(new URL(`${url}/v1/completions`), {
    timeoutMs: 60_000,
    body: JSON.stringify({
      model: 'tiny',
      prompt,
      max_tokens: N,
      temperature: 0,
      logprobs: 0,
      stream: true,
      ignore_eos: true,
    }),
    onData: (payload, t) => {
      if (payload === '[DONE]') return;
      const n = (JSON.parse(payload) as { choices: { logprobs?: { tokens: string[] } }[] })
        .choices[0]?.logprobs?.tokens.length;
      if (!n) return;
      tokens += n;
      times.push(t);
    },
  });
  return { tokens, times };
}

describe('streaming: one SSE event per token', () => {
  it('gives every token its own event (openai client, logprobs count the tokens)', async () => {
    const client = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const streams = await Promise.all(
      [0, 1, 2, 3].map((i) =>
        client.completions.create({
          model: 'tiny',
          prompt: `story ${i}:`,
          max_tokens: N,
          temperature: 0,
          logprobs: 0,
          stream: true,
          ignore_eos: true,
        } as OpenAI.CompletionCreateParamsStreaming),
      ),
    );
    const perEvent = await Promise.all(
      streams.map(async (s) => {
        const counts: number[] = [];
        for await (const chunk of s) {
          const n = chunk.choices[0]?.logprobs?.tokens?.length ?? 0;
          if (n > 0) counts.push(n);
        }
        return counts;
      }),
    );
    for (const counts of perEvent) expect(counts).toEqual(Array(N).fill(1));
  });

  it('delivers the token events in separate network reads, not in bursts', async () => {
    const { tokens, times } = await arrivalTimes(served.url, 'once upon a time');
    expect(tokens).toBe(N);
    expect(burstGaps(times)).toBe(0);
  });

  it('holds when the forward blocks the event loop (a synchronous model)', async () => {
    const runner = new BlockingRunner({ vocabSize: 128, maxModelLen: 512 });
    const engine = new LlmEngine(new HostSamplingRunner(runner));
    const app = createServer({
      engine,
      tokenizer: fakeTokenizer,
      modelName: 'tiny',
      chatTemplate: fakeChatTemplate,
      options: { processMetrics: false },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const { port } = app.server.address() as { port: number };
      const runs = await Promise.all(
        ['abc', 'def', 'ghi'].map((p) => arrivalTimes(`http://127.0.0.1:${port}`, p)),
      );
      for (const r of runs) {
        expect(r.tokens).toBe(N);
        expect(burstGaps(r.times)).toBe(0);
      }
    } finally {
      await app.close();
      await engine.shutdown();
    }
  });
});
