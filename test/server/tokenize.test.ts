import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR } from '../../src/cli/serve-command.js';
import { serveModel } from '../serve-model.js';

// /tokenize and /detokenize (vLLM's endpoints) on the bundled model's real tokenizer and
// template: a chat /tokenize count must equal the prompt_tokens the same chat request reports.
describe('tokenizer endpoints', () => {
  let url = '';
  let close: () => Promise<void> = async () => {};
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    const served = await serveModel(BUNDLED_MODEL_DIR);
    url = served.url;
    close = served.close;
  });
  afterAll(() => close());

  it('round-trips a prompt through /tokenize and /detokenize', async () => {
    const text = 'Héllo, wörld! 12 + 30 = 42';
    const t = await post('/tokenize', { model: 'tiny', prompt: text, add_special_tokens: false });
    expect(t.status).toBe(200);
    const tokens = t.body['tokens'] as number[];
    expect(t.body['count']).toBe(tokens.length);
    expect(tokens.length).toBeGreaterThan(5);
    const d = await post('/detokenize', { tokens });
    expect(d.body['prompt']).toBe(text);
  });

  it('counts chat messages exactly as a chat request reports prompt_tokens', async () => {
    const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const t = await post('/tokenize', { messages });
    const c = await post('/v1/chat/completions', { model: 'tiny', messages, max_tokens: 1 });
    expect(t.body['count']).toBe((c.body['usage'] as Record<string, number>)['prompt_tokens']);
  });

  it('answers bad input with a 400 naming the field, and an unknown model with a 404', async () => {
    const bad = await post('/detokenize', { tokens: [1, -3] });
    expect(bad.status).toBe(400);
    expect((bad.body['error'] as Record<string, unknown>)['param']).toBe('tokens[1]');
    expect((await post('/tokenize', {})).status).toBe(400);
    expect((await post('/tokenize', { model: 'other', prompt: 'x' })).status).toBe(404);
    const v = await fetch(`${url}/version`);
    expect(((await v.json()) as { version: string }).version).toMatch(/^\d+\.\d+\.\d+/);
  });
});
