/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies with vLLM extension fields */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { BUNDLED_MODEL_DIR } from '../../src/cli/serve-command.js';
import { logSumExp } from '../../src/engine/logits-processing.js';
import { loadModel } from '../../src/model/load-model.js';
import { runForward } from '../../src/model/run-forward.js';
import { loadTokenizer } from '../../src/tokenizer/load-tokenizer.js';
import { M3_TOKENS } from '../../src/tokenizer/minimax-m3-tokens.js';
import { serveModel } from '../serve-model.js';

// echo + logprobs, vLLM's prompt_logprobs and logit_bias over HTTP on the bundled model,
// checked against a direct forward of the same ids.
describe('prompt logprobs and logit_bias over HTTP', () => {
  let url = '';
  let client: OpenAI;
  let close: () => Promise<void> = async () => {};
  const tok = loadTokenizer(BUNDLED_MODEL_DIR);
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  beforeAll(async () => {
    const served = await serveModel(BUNDLED_MODEL_DIR);
    url = served.url;
    close = served.close;
    client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'x', maxRetries: 0 });
  });
  afterAll(() => close());

  const prompt = 'What is 12 + 30? The answer is 42, and 7 * 6 is also 42.';

  it('echo with logprobs and max_tokens 0 scores the prompt like a direct forward', async () => {
    // Warm the prefix cache: scoring requests must not be served from it.
    await client.completions.create({ model: 'tiny', prompt, max_tokens: 1 });
    const r = await client.completions.create({
      model: 'tiny',
      prompt,
      echo: true,
      logprobs: 3,
      max_tokens: 0,
    });
    const ids = tok.encode(prompt, { addSpecialTokens: true });
    const ref = await runForward(
      await loadModel(BUNDLED_MODEL_DIR, { backend: new CpuBackend() }),
      ids,
    );
    const c = r.choices[0]!;
    expect(c.text).toBe(prompt);
    expect(c.finish_reason).toBe('length');
    expect(r.usage?.completion_tokens).toBe(0);
    const lp = c.logprobs!;
    expect(lp.tokens).toEqual(ids.map((id) => tok.decode([id])));
    expect(lp.token_logprobs![0]).toBeNull();
    expect(lp.top_logprobs![0]).toBeNull();
    ids.slice(1).forEach((t, i) => {
      const row = Float32Array.from(ref.logits[i]!);
      expect(Math.abs(lp.token_logprobs![i + 1]! - (row[t]! - logSumExp(row)))).toBeLessThan(1e-4);
      expect(Object.keys(lp.top_logprobs![i + 1]!).length).toBeGreaterThan(0);
    });
    expect(lp.text_offset![1]).toBe(tok.decode([ids[0]!]).length);
    expect(r.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
  });

  it('echo with generation puts the prompt first and continues the offsets', async () => {
    const r = await client.completions.create({
      model: 'tiny',
      prompt,
      echo: true,
      logprobs: 1,
      max_tokens: 4,
      temperature: 0,
      ignore_eos: true,
    } as OpenAI.CompletionCreateParamsNonStreaming);
    const c = r.choices[0]!;
    const n = tok.encode(prompt, { addSpecialTokens: true }).length;
    expect(c.text.startsWith(prompt)).toBe(true);
    expect(c.logprobs!.tokens!.length).toBe(n + 4);
    expect(c.logprobs!.text_offset![n]).toBe(prompt.length);
    expect(c.logprobs!.token_logprobs!.slice(1).every((x) => typeof x === 'number')).toBe(true);
  });

  it('returns vLLM prompt_logprobs on completions and chat', async () => {
    const r = await post('/v1/completions', {
      model: 'tiny',
      prompt,
      prompt_logprobs: 2,
      max_tokens: 1,
    });
    expect(r.status).toBe(200);
    const pl = r.body['choices'][0]['prompt_logprobs'] as (Record<string, any> | null)[];
    const ids = tok.encode(prompt, { addSpecialTokens: true });
    expect(pl.length).toBe(ids.length);
    expect(pl[0]).toBeNull();
    const entry = pl[1]!;
    expect(entry[String(ids[1])]).toMatchObject({ decoded_token: tok.decode([ids[1]!]) });
    expect(Object.keys(entry).length).toBeGreaterThanOrEqual(2);
    const ranks = Object.values(entry).map((e) => e.rank as number);
    expect(ranks).toContain(1);
    const chat = await post('/v1/chat/completions', {
      model: 'tiny',
      messages: [{ role: 'user', content: 'Hi' }],
      prompt_logprobs: 0,
      max_tokens: 2,
    });
    expect(chat.status).toBe(200);
    expect(chat.body['prompt_logprobs'][0]).toBeNull();
    expect(chat.body['prompt_logprobs'].length).toBe(chat.body['usage']['prompt_tokens']);
  });

  it('logit_bias +100 forces a token, -100 bans the greedy choice, bad keys are a 400', async () => {
    const forced = tok.encode(' banana', { addSpecialTokens: false })[0]!;
    const r = await client.completions.create({
      model: 'tiny',
      prompt,
      max_tokens: 3,
      temperature: 0.8,
      seed: 1,
      logit_bias: { [String(forced)]: 250 },
    });
    expect(tok.encode(r.choices[0]!.text, { addSpecialTokens: false })).toEqual([
      forced,
      forced,
      forced,
    ]);
    const greedy = { model: 'tiny', prompt, max_tokens: 1, temperature: 0, logprobs: 0 } as const;
    const first = (await client.completions.create(greedy)).choices[0]!.text;
    // The greedy choice may be the end of turn, which stops the request and adds no text.
    const firstId = tok.encode(first === '' ? M3_TOKENS.turnEnd : first, {
      addSpecialTokens: false,
    })[0]!;
    const banned = await client.completions.create({
      ...greedy,
      logit_bias: { [String(firstId)]: -100 },
    });
    expect(banned.choices[0]!.text).not.toBe(first);
    const bad = await post('/v1/completions', {
      model: 'tiny',
      prompt,
      logit_bias: { '99999': 1 },
    });
    expect(bad.status).toBe(400);
    expect(bad.body['error']['param']).toBe('logit_bias');
    const nan = await post('/v1/completions', { model: 'tiny', prompt, logit_bias: { '5': 'x' } });
    expect(nan.status).toBe(400);
  });
});
