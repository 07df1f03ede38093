import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GenerateRequest } from '../../src/engine/engine-types.js';
import { EOS_ID, fakeTokenizer, ids } from './fake-text.js';
import { MODEL, startTestServer, type TestServer } from './harness.js';

interface ErrorJson {
  error: { message: string; type: string; param: string | null; code: string | null };
}

function respond(req: GenerateRequest) {
  const prompt = fakeTokenizer.decode(req.promptIds, { skipSpecialTokens: false });
  if (prompt.includes('engine-error')) return { tokens: [], error: 'device lost' };
  if (prompt.includes('engine-throw')) return { tokens: ids('abcdef'), throwAfter: 2 };
  return { tokens: [...ids('ok'), EOS_ID] };
}

const chat = (content: string, extra: Record<string, unknown> = {}) => ({
  model: MODEL,
  messages: [{ role: 'user', content }],
  ...extra,
});

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({
    engine: { respond, maxModelLen: 64 },
    options: { bodyLimitBytes: 4096 },
  });
});
afterAll(() => s.close());

/** Posts, checks the status and the OpenAI error shape, then checks the server still serves. */
async function expectError(path: string, body: unknown, status: number): Promise<ErrorJson> {
  const r = await s.post(path, body);
  expect(r.status).toBe(status);
  const json = (await r.json()) as ErrorJson;
  expect(typeof json.error.message).toBe('string');
  expect(typeof json.error.type).toBe('string');
  const ok = await s.post('/v1/chat/completions', chat('hi'));
  expect(ok.status).toBe(200);
  return json;
}

describe('malformed requests', () => {
  it('answers malformed JSON with 400', async () => {
    const e = await expectError('/v1/chat/completions', '{"model": "x", ', 400);
    expect(e.error.type).toBe('invalid_request_error');
    expect(e.error.message).toMatch(/not valid JSON/);
    await expectError('/v1/completions', '', 400);
    await expectError('/v1/completions', '"just a string"', 400);
  });

  it.each([
    [{ model: MODEL, messages: 'hi' }, 'messages', /messages must be an array/],
    [{ model: MODEL, messages: [] }, 'messages', /at least one/],
    [{ model: MODEL, messages: [{ content: 'x' }] }, 'messages[0].role', /is required/],
    [{ model: MODEL, messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role', /one of/],
    [chat('x', { temperature: 'hot' }), 'temperature', /must be a number/],
    [chat('x', { n: 1.5 }), 'n', /integer/],
    [chat('x', { stop: [1, 2] }), 'stop', /string/],
    [chat('x', { stream: 'yes' }), 'stream', /boolean/],
    [chat('x', { stop_token_ids: [1, -3] }), 'stop_token_ids[1]', /token id/],
    [
      chat('x', { tools: [{ type: 'function', function: {} }] }),
      'tools[0].function.name',
      /required/,
    ],
    [chat('x', { stream_options: { include_usage: true } }), 'stream_options', /only allowed/],
    [chat('x', { model: 42 }), 'model', /string/],
  ])('answers wrong types with 400 naming the field (%#)', async (body, param, message) => {
    const e = await expectError('/v1/chat/completions', body, 400);
    expect(e.error.param).toBe(param);
    expect(e.error.message).toMatch(message);
  });

  it('refuses non-text content parts, naming the part', async () => {
    const body = {
      model: MODEL,
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }],
    };
    const e = await expectError('/v1/chat/completions', body, 400);
    expect(e.error.param).toBe('messages[0].content[0].type');
  });

  it.each([
    [{ temperature: 3 }, 'temperature'],
    [{ top_p: 0 }, 'top_p'],
    [{ top_k: -5 }, 'top_k'],
    [{ min_p: 2 }, 'min_p'],
    [{ presence_penalty: 3 }, 'presence_penalty'],
    [{ frequency_penalty: -2.5 }, 'frequency_penalty'],
    [{ repetition_penalty: 0 }, 'repetition_penalty'],
    [{ max_tokens: 0 }, 'max_tokens'],
    [{ n: 0 }, 'n'],
    [{ seed: 1.5 }, 'seed'],
    [{ logprobs: true, top_logprobs: 50 }, 'top_logprobs'],
    [{ stop: [''] }, 'stop'],
    [{ logit_bias: { '999999': 10 } }, 'logit_bias'],
    [{ logit_bias: { a: 10 } }, 'logit_bias'],
    [{ prompt_logprobs: 21 }, 'prompt_logprobs'],
  ])('answers bad sampling values with 400 (%o)', async (extra, param) => {
    const e = await expectError('/v1/chat/completions', chat('x', extra), 400);
    expect(e.error.param).toBe(param);
  });

  it('answers completions with bad prompts and logprobs with 400', async () => {
    let e = await expectError('/v1/completions', { model: MODEL, prompt: [1, 'a'] }, 400);
    expect(e.error.param).toBe('prompt');
    e = await expectError('/v1/completions', { model: MODEL, prompt: [[1], [70000]] }, 400);
    expect(e.error.param).toBe('prompt[1][0]');
    e = await expectError('/v1/completions', { model: MODEL, prompt: 'x', logprobs: 21 }, 400);
    expect(e.error.param).toBe('logprobs');
    e = await expectError('/v1/completions', { model: MODEL, prompt: 'x', max_tokens: 0 }, 400);
    expect(e.error.param).toBe('max_tokens');
  });
});

describe('limits', () => {
  it('answers an oversize prompt with a context-length 400', async () => {
    const e = await expectError('/v1/chat/completions', chat('x'.repeat(80)), 400);
    expect(e.error.code).toBe('context_length_exceeded');
    expect(e.error.message).toMatch(/maximum context length is 64 tokens/);
    const e2 = await expectError(
      '/v1/completions',
      { model: MODEL, prompt: 'abc', max_tokens: 62 },
      400,
    );
    expect(e2.error.message).toMatch(
      /you requested 65 tokens \(3 in the prompt, 62 in the completion\)/,
    );
  });

  it('answers a body over the limit with 413', async () => {
    const e = await expectError('/v1/chat/completions', chat('y'.repeat(5000)), 413);
    expect(e.error.code).toBe('request_too_large');
  });

  it('answers an unknown model with 404 through the client', async () => {
    const err = await s.client.chat.completions
      .create({ model: 'gpt-9', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
  });

  it('answers unknown routes with an OpenAI-style 404', async () => {
    const r = await fetch(`${s.url}/v1/embeddings`, { method: 'POST', body: '{}' });
    expect(r.status).toBe(404);
    expect(((await r.json()) as ErrorJson).error.message).toMatch(/No route/);
  });

  it('refuses extension fields the server was not started for', async () => {
    const e = await expectError(
      '/v1/chat/completions',
      chat('x', { return_routed_experts: true }),
      400,
    );
    expect(e.error.message).toMatch(/--return-routed-experts/);
    const tools = [{ type: 'function', function: { name: 'f' } }];
    const t = await expectError('/v1/chat/completions', chat('x', { tools }), 400);
    expect(t.error.message).toMatch(/--tool-call-parser/);
    const rf = await expectError(
      '/v1/chat/completions',
      chat('x', { response_format: { type: 'json_object' } }),
      400,
    );
    // This fake-tokenizer server has no grammar backend.
    expect(rf.error.param).toBe('response_format');
    expect(rf.error.message).toMatch(/needs structured outputs/);
  });
});

describe('engine failures', () => {
  it('answers an engine error event with 500 and keeps serving', async () => {
    const e = await expectError('/v1/chat/completions', chat('engine-error'), 500);
    expect(e.error.type).toBe('server_error');
    expect(e.error.message).toMatch(/device lost/);
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).toMatch(/moeserve_request_finish_total\{finish_reason="error"\} [1-9]/);
  });

  it('answers an engine that throws with 500', async () => {
    const e = await expectError('/v1/completions', { model: MODEL, prompt: 'engine-throw' }, 500);
    expect(e.error.message).toMatch(/kaboom/);
  });

  it('reports a failure mid-stream in-band, which the client raises', async () => {
    const stream = await s.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'engine-throw' }],
      stream: true,
    });
    let text = '';
    const err = await (async () => {
      for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(text).toBe('ab');
    expect((await s.post('/v1/chat/completions', chat('hi'))).status).toBe(200);
  });
});

describe('chat template', () => {
  it('answers chat with 400 when the model has no template; completions still work', async () => {
    const t = await startTestServer({ engine: { respond }, chatTemplate: null });
    try {
      const r = await t.post('/v1/chat/completions', chat('hi'));
      expect(r.status).toBe(400);
      const c = await t.client.completions.create({ model: MODEL, prompt: 'hi' });
      expect(c.choices[0]!.text).toBe('ok');
    } finally {
      await t.close();
    }
  });

  it('answers a template that throws with 400', async () => {
    const t = await startTestServer({
      engine: { respond },
      chatTemplate: () => {
        throw new Error('Conversation roles must alternate');
      },
    });
    try {
      const r = await t.post('/v1/chat/completions', chat('hi'));
      expect(r.status).toBe(400);
      expect(((await r.json()) as ErrorJson).error.message).toMatch(/must alternate/);
    } finally {
      await t.close();
    }
  });
});
