import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GenerateRequest } from '../../src/engine/engine-types.js';
import { EOS_ID, fakeTokenizer, ids } from './fake-text.js';
import { MODEL, startTestServer, type TestServer } from './harness.js';

/** The prompt decides the reply: "say:<text>" answers <text> then EOS; otherwise a greeting. */
function respond(req: GenerateRequest) {
  const prompt = fakeTokenizer.decode(req.promptIds, { skipSpecialTokens: false });
  const m = /say:([^<]*)/.exec(prompt);
  return { tokens: [...ids(m ? m[1]! : 'Hello world!'), EOS_ID] };
}

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({
    engine: { respond, cachedTokens: 3, delayMs: 1 },
    options: { returnRoutedExperts: true },
  });
});
afterAll(() => s.close());

const user = (content: string) => [{ role: 'user' as const, content }];

describe('chat completions', () => {
  it('answers non-streaming with usage', async () => {
    const r = await s.client.chat.completions.create({ model: MODEL, messages: user('hi') });
    expect(r.object).toBe('chat.completion');
    expect(r.model).toBe(MODEL);
    expect(r.choices[0]!.message).toMatchObject({ role: 'assistant', content: 'Hello world!' });
    expect(r.choices[0]!.finish_reason).toBe('stop');
    const promptLen = '<|user|>hi<|assistant|>'.length;
    expect(r.usage).toEqual({
      prompt_tokens: promptLen,
      completion_tokens: 13,
      total_tokens: promptLen + 13,
      prompt_tokens_details: { cached_tokens: 3 },
    });
  });

  it('streams a role chunk, content deltas, a finish chunk and a usage chunk', async () => {
    const stream = await s.client.chat.completions.create({
      model: MODEL,
      messages: user('say:abc def'),
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('abc def');
    const finishes = chunks.flatMap((c) => c.choices.map((x) => x.finish_reason)).filter(Boolean);
    expect(finishes).toEqual(['stop']);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({
      completion_tokens: 8,
      prompt_tokens_details: { cached_tokens: 3 },
    });
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it('maps sampling fields onto the engine request; n choices get seed + index', async () => {
    const before = s.engine.requests.length;
    const r = await s.client.chat.completions.create({
      model: MODEL,
      messages: user('say:xy'),
      n: 2,
      temperature: 0.7,
      top_p: 0.9,
      seed: 11,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      max_completion_tokens: 5,
      // @ts-expect-error vLLM extension fields
      top_k: 20,
      min_p: 0.05,
      repetition_penalty: 1.1,
      stop_token_ids: [7],
      ignore_eos: true,
    });
    expect(r.choices.map((c) => c.index)).toEqual([0, 1]);
    const reqs = s.engine.requests.slice(before);
    expect(reqs).toHaveLength(2);
    expect(reqs.map((q) => q.sampling.seed)).toEqual([11, 12]);
    expect(reqs[0]).toMatchObject({
      sampling: { temperature: 0.7, topP: 0.9, topK: 20, minP: 0.05, repetitionPenalty: 1.1 },
      maxTokens: 5,
      stopTokenIds: [7],
      ignoreEos: true,
      logprobs: null,
    });
    expect(reqs[0]!.sampling).toMatchObject({ presencePenalty: 0.5, frequencyPenalty: -0.5 });
    // ignore_eos: the EOS is not a stop; the script then runs out, which the fake calls "length".
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.choices[0]!.message.content).toBe('xy');
    expect(r.usage!.completion_tokens).toBe(2 * 3);
  });

  it('finishes with "length" at max_tokens', async () => {
    const r = await s.client.chat.completions.create({
      model: MODEL,
      messages: user('say:abcdefgh'),
      max_tokens: 3,
    });
    expect(r.choices[0]!.message.content).toBe('abc');
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.usage!.completion_tokens).toBe(3);
  });

  it('returns chat-format logprobs', async () => {
    const r = await s.client.chat.completions.create({
      model: MODEL,
      messages: user('say:ab'),
      logprobs: true,
      top_logprobs: 2,
    });
    const lp = r.choices[0]!.logprobs!.content!;
    expect(lp.map((t) => t.token)).toEqual(['a', 'b', '<eos>']);
    expect(lp[0]!.top_logprobs).toHaveLength(2);
    expect(lp[0]!.top_logprobs[1]).toMatchObject({ token: 'x', bytes: [120] });
    expect(lp[1]!.logprob).toBeCloseTo(-1);
  });

  it('accepts and ignores unknown extra fields', async () => {
    const r = await s.post('/v1/chat/completions', {
      model: MODEL,
      messages: [{ role: 'user', content: 'hi', some_extra: 1 }],
      frobnicate: { deep: [1, 2] },
      user: 'abc',
      parallel_tool_calls: false,
    });
    expect(r.status).toBe(200);
    expect(
      ((await r.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message
        .content,
    ).toBe('Hello world!');
  });

  it('adds routed experts per generated token when asked', async () => {
    const r = (await s.client.chat.completions.create({
      model: MODEL,
      messages: user('say:abc'),
      // @ts-expect-error extension field
      return_routed_experts: true,
    })) as unknown as { choices: { routed_experts: Record<string, number[][]> }[] };
    const rows = r.choices[0]!.routed_experts['3']!;
    expect(rows).toHaveLength(4);
    expect(rows[0]).toEqual([1, 9, 10, 11]);
  });
});

describe('stop strings', () => {
  it('cuts the text before the stop string and aborts the engine request', async () => {
    const r = await s.client.chat.completions.create({
      model: MODEL,
      messages: user('say:Hello STOP and more text after the stop'),
      stop: ['STOP', 'never'],
    });
    expect(r.choices[0]!.message.content).toBe('Hello ');
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(r.usage!.completion_tokens).toBe('Hello STOP'.length);
    const id = s.engine.requests.at(-1)!.id;
    expect(s.engine.aborted).toContain(id);
  });

  it('finds a stop string split across streamed chunks', async () => {
    const stream = await s.client.chat.completions.create({
      model: MODEL,
      messages: user('say:one two<END>three'),
      stop: '<END>',
      stream: true,
    });
    let text = '';
    let finish: string | null = null;
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe('one two');
    expect(finish).toBe('stop');
  });

  it('keeps the stop string with include_stop_str_in_output and releases partial matches', async () => {
    const a = await s.client.completions.create({
      model: MODEL,
      prompt: 'say:x+y=z',
      stop: ['=z'],
      // @ts-expect-error vLLM extension field
      include_stop_str_in_output: true,
    });
    expect(a.choices[0]!.text).toBe('x+y=z');
    const b = await s.client.completions.create({
      model: MODEL,
      prompt: 'say:abc wor',
      stop: 'world',
    });
    expect(b.choices[0]!.text).toBe('abc wor');
    expect(b.choices[0]!.finish_reason).toBe('stop');
  });
});

describe('completions', () => {
  it('answers non-streaming for several prompts and n, indexed prompt-major', async () => {
    const r = await s.client.completions.create({
      model: MODEL,
      prompt: ['say:a', 'say:bb'],
      n: 2,
    });
    expect(r.object).toBe('text_completion');
    expect(r.choices.map((c) => [c.index, c.text])).toEqual([
      [0, 'a'],
      [1, 'a'],
      [2, 'bb'],
      [3, 'bb'],
    ]);
    expect(r.usage).toMatchObject({ prompt_tokens: 5 + 6, completion_tokens: 2 * 2 + 3 * 2 });
  });

  it('streams text and a usage chunk', async () => {
    const stream = await s.client.completions.create({
      model: MODEL,
      prompt: 'say:streamed',
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage = null;
    for await (const c of stream) {
      text += c.choices[0]?.text ?? '';
      if (c.usage) usage = c.usage;
    }
    expect(text).toBe('streamed');
    expect(usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 });
  });

  it('takes token-id prompts and returns completions-format logprobs', async () => {
    const r = await s.client.completions.create({
      model: MODEL,
      prompt: ids('say:hey'),
      logprobs: 1,
    });
    const lp = r.choices[0]!.logprobs!;
    expect(lp.tokens).toEqual(['h', 'e', 'y', '<eos>']);
    expect(lp.text_offset).toEqual([0, 1, 2, 3]);
    expect(lp.top_logprobs![0]).toEqual({ h: lp.token_logprobs![0] });
  });
});

describe('models and health', () => {
  it('lists the served model', async () => {
    const list = await s.client.models.list();
    expect(list.data.map((m) => m.id)).toEqual([MODEL]);
    const one = await s.client.models.retrieve(MODEL);
    expect(one).toMatchObject({
      id: MODEL,
      object: 'model',
      owned_by: 'moeserve',
      max_model_len: 256,
    });
    const missing = await fetch(`${s.url}/v1/models/nope`);
    expect(missing.status).toBe(404);
  });

  it('answers /health', async () => {
    const r = await fetch(`${s.url}/health`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: 'ok' });
  });
});
