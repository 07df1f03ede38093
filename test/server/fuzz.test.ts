import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GenerateRequest } from '../../src/engine/engine-types.js';
import { EOS_ID, fakeTokenizer, ids } from './fake-text.js';
import { MODEL, startTestServer, type TestServer } from './harness.js';
import { rawRequest } from './raw-http.js';

/** mulberry32, so a failing case can be replayed from its index. */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function respond(req: GenerateRequest) {
  const prompt = fakeTokenizer.decode(req.promptIds, { skipSpecialTokens: false });
  return { tokens: [...ids(prompt.includes('probe') ? 'greedy answer' : 'ok'), EOS_ID] };
}

const ROUTES = [
  '/v1/chat/completions',
  '/v1/completions',
  '/tokenize',
  '/detokenize',
  '/v1/models',
  '/v1/models/x',
  '/flush_cache',
  '/health',
  '/metrics',
  '/version',
  '/nope',
];
const WEIRD: unknown[] = [
  null,
  true,
  0,
  -1,
  1.5,
  1e308,
  -1e308,
  '',
  'x',
  'a'.repeat(5000),
  [],
  [[]],
  {},
  { '': 1 },
  [1, 'a', null],
  { __proto__: { polluted: 1 } },
  { constructor: { prototype: {} } },
  '\u0000',
  '\ud800',
  '<mm:think>',
  2 ** 53,
  -(2 ** 31),
  NaN,
];
const FIELDS = [
  'model',
  'messages',
  'prompt',
  'n',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'top_k',
  'stop',
  'stream',
  'stream_options',
  'logprobs',
  'top_logprobs',
  'seed',
  'tools',
  'tool_choice',
  'response_format',
  'logit_bias',
  'echo',
  'tokens',
  'best_of',
  'chat_template_kwargs',
  'stop_token_ids',
  'presence_penalty',
  'prompt_logprobs',
];

/** One malformed request: a valid body with fields replaced by odd values, or raw junk. */
function malformed(rand: () => number): { path: string; body: string; type: string } {
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rand() * a.length)]!;
  const path = pick(ROUTES) + (rand() < 0.1 ? '?x=%zz' : '');
  const body: Record<string, unknown> = {
    model: MODEL,
    messages: [{ role: 'user', content: 'hi' }],
    prompt: 'hi',
    max_tokens: 3,
  };
  const edits = 1 + Math.floor(rand() * 3);
  for (let i = 0; i < edits; i++) body[pick(FIELDS)] = pick(WEIRD);
  if (rand() < 0.2)
    body['messages'] = [{ role: pick(['user', 'tool', 'x', 7]), content: pick(WEIRD) }];
  let text = JSON.stringify(body);
  if (rand() < 0.1) text = text.slice(0, Math.floor(rand() * text.length)); // cut JSON
  if (rand() < 0.05) text = JSON.stringify(pick(WEIRD));
  const type = rand() < 0.9 ? 'application/json' : pick(['text/plain', '', 'application/xml']);
  return { path, body: text, type };
}

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({
    engine: { respond, maxModelLen: 4096 },
    options: { bodyLimitBytes: 64 * 1024 },
  });
});
afterAll(() => s.close());

async function probe(): Promise<string | null> {
  const r = await s.client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'probe' }],
    temperature: 0,
  });
  return r.choices[0]!.message.content;
}

describe('route fuzz', () => {
  it('answers 400 malformed requests without a 5xx, and a greedy request is unchanged after each batch', async () => {
    const rand = seeded(20261201);
    const want = await probe();
    expect(want).toBe('greedy answer');
    const heap0 = process.memoryUsage().heapUsed;
    const statuses: Record<number, number> = {};
    for (let i = 0; i < 400; i++) {
      const m = malformed(rand);
      const headers: Record<string, string> = m.type ? { 'content-type': m.type } : {};
      const post = rand() < 0.8;
      const r = await fetch(`${s.url}${m.path}`, {
        method: post ? 'POST' : 'GET',
        headers,
        ...(post && { body: m.body }),
      }).catch(() => null);
      expect(r, `case ${i}: ${m.path} ${m.body.slice(0, 200)}`).not.toBeNull();
      statuses[r!.status] = (statuses[r!.status] ?? 0) + 1;
      expect(r!.status, `case ${i}: ${m.path} ${m.body.slice(0, 200)}`).toBeLessThan(500);
      const text = await r!.text();
      if (r!.status >= 400)
        expect(
          (JSON.parse(text) as { error: { message: string } }).error.message,
          `case ${i}`,
        ).toBeTypeOf('string');
      if (i % 25 === 24) {
        expect((await fetch(`${s.url}/health`)).status).toBe(200);
        expect(await probe()).toBe(want);
      }
    }
    // Raw protocol junk, which fetch cannot send.
    for (const junk of [
      'GET /%zz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n',
      'GET / HTTP/9.9\r\n\r\n',
      'POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n',
      'POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\n',
      '\u0000\u0001\u0002\r\n\r\n',
    ]) {
      const r = await rawRequest(s.port, junk, 2000);
      expect(r.status === null || r.status < 500, junk).toBe(true);
    }
    expect(await probe()).toBe(want);
    expect(statuses[400]).toBeGreaterThan(100);
    expect(process.memoryUsage().heapUsed - heap0).toBeLessThan(200 * 2 ** 20);
    expect(s.engine.running).toBe(0);
  });
});
