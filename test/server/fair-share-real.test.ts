import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR } from '../../src/cli/serve-command.js';
import { serveModel, type ServedModel } from '../serve-model.js';

// The real engine (bundled model, CPU): a client's short greedy request beside another's
// large-n request is not starved behind it, and gets the tokens it gets alone. 16 batch slots
// and n = 32: first come, first served would run the short request only after the big one's
// 32 sequences, all of which were queued before it; the fair share lets it in at once.
let m: ServedModel;
beforeAll(async () => {
  m = await serveModel(BUNDLED_MODEL_DIR, { maxNumSeqs: 16 });
});
afterAll(() => m.close());

interface Completion {
  choices: { text: string; finish_reason: string }[];
  usage: { completion_tokens: number };
}

async function complete(body: Record<string, unknown>): Promise<Completion> {
  const r = await fetch(`${m.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tiny', ...body }),
  });
  expect(r.status).toBe(200);
  return (await r.json()) as Completion;
}

describe('a short greedy request beside a large-n request', () => {
  it('finishes first, with the tokens it gets alone', async () => {
    const short = { prompt: 'The capital of', max_tokens: 8, temperature: 0, ignore_eos: true };
    const alone = await complete(short);
    expect(alone.usage.completion_tokens).toBe(8);
    let bigDone = 0;
    const big = complete({
      prompt: 'Once upon a time',
      n: 32,
      max_tokens: 64,
      temperature: 1,
      seed: 1,
      ignore_eos: true,
    }).then((c) => ((bigDone = performance.now()), c));
    await new Promise((r) => setTimeout(r, 50)); // the big request is admitted first
    const beside = await complete(short);
    const shortDone = performance.now();
    expect(beside.choices[0]!.text).toBe(alone.choices[0]!.text);
    const b = await big;
    expect(b.choices).toHaveLength(32);
    expect(b.usage.completion_tokens).toBe(32 * 64);
    // The bound: the short request does not wait for the big one to drain (the big one's
    // second wave of 16 sequences alone takes longer than the short request).
    expect(bigDone).toBeGreaterThan(shortDone);
  });
});
