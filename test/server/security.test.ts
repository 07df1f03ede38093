import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { GenerateRequest } from '../../src/engine/engine-types.js';
import { resolveApiKey } from '../../src/server/api-key.js';
import { createServer } from '../../src/server/http-server.js';
import { EOS_ID, fakeTokenizer, ids } from './fake-text.js';
import { MODEL, startTestServer, type TestServer } from './harness.js';
import { rawJson, rawPost, rawRequest } from './raw-http.js';

function respond(req: GenerateRequest) {
  const prompt = fakeTokenizer.decode(req.promptIds, { skipSpecialTokens: false });
  if (prompt.includes('engine-error')) return { tokens: [], error: 'device lost' };
  return { tokens: [...ids('ok'), EOS_ID] };
}

let s: TestServer | null = null;
afterEach(async () => {
  await s?.close();
  s = null;
});

const KEY = 'k3y-Secret';
const chatBody = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] });

describe('API key', () => {
  // Every spelling the router maps onto a protected route; none may run it without the key.
  const bypasses: [string, string][] = [
    ['/v1/chat/completions', chatBody],
    ['/%76%31/chat/completions', chatBody],
    ['/v1/chat/%63ompletions', chatBody],
    ['http://h/v1/chat/completions', chatBody],
    ['http://127.0.0.1/%76%31/completions', JSON.stringify({ model: MODEL, prompt: 'x' })],
    ['/v1/chat/completions?x=1', chatBody],
    ['/v1/chat/completions?', chatBody],
    ['/v1/chat/completions#frag', chatBody],
    ['//v1/chat/completions', chatBody],
    ['/V1/chat/completions', chatBody],
    ['/v1/chat/completions/', chatBody],
    ['/v1//chat/completions', chatBody],
    ['/v1/chat/completions;x', chatBody],
    ['/v1/completions', JSON.stringify({ model: MODEL, prompt: 'x' })],
    ['/flush_cache', ''],
    ['/flush_cache?x', ''],
    ['/%66lush_cache', ''],
    ['/reset_prefix_cache?a=b', ''],
    ['http://h/flush_cache', ''],
    ['/tokenize', JSON.stringify({ prompt: 'x' })],
    ['/%74okenize?x', JSON.stringify({ prompt: 'x' })],
    ['/detokenize', JSON.stringify({ tokens: [65] })],
  ];

  it('is checked on the routed path: no encoding, target form or query string gets past it', async () => {
    let resets = 0;
    s = await startTestServer({
      engine: { respond },
      options: { apiKey: KEY },
      resetPrefixCache: () => resets++,
    });
    for (const [target, body] of bypasses) {
      const r = await rawRequest(s.port, rawPost(target, body));
      expect([401, 404], `${target} -> ${r.status}`).toContain(r.status);
      const e = rawJson(r) as { error: { type: string } };
      expect(e.error.type, target).toBe('invalid_request_error');
    }
    expect(s.engine.requests).toHaveLength(0);
    expect(resets).toBe(0);
    // Any of these spellings works with the key, so the check sits on the same routes.
    for (const target of [
      '/%76%31/chat/completions',
      'http://h/v1/chat/completions',
      '/flush_cache?x',
    ]) {
      const body = target.includes('flush') ? '' : chatBody;
      const r = await rawRequest(s.port, rawPost(target, body, { Authorization: `Bearer ${KEY}` }));
      expect(r.status, target).toBe(200);
    }
    expect(resets).toBe(1);
    const wrong = await rawRequest(
      s.port,
      rawPost('/v1/chat/completions', chatBody, { Authorization: `Bearer ${KEY}x` }),
    );
    expect(wrong.status).toBe(401);
    const lower = await rawRequest(
      s.port,
      rawPost('/v1/chat/completions', chatBody, { Authorization: `bearer ${KEY}` }),
    );
    expect(lower.status).toBe(200);
    for (const open of ['/health', '/version', '/metrics'])
      expect((await fetch(`${s.url}${open}`)).status, open).toBe(200);
  });

  it('comes from --api-key, --api-key-file or $MOESERVE_API_KEY; an empty one is an error', () => {
    const dir = mkdtempSync(join(tmpdir(), 'moeserve-key-'));
    const file = join(dir, 'key');
    writeFileSync(file, 'from-file\n');
    expect(resolveApiKey({ flag: 'a', env: undefined })).toBe('a');
    expect(resolveApiKey({ file, env: 'env' })).toBe('from-file');
    expect(resolveApiKey({ env: 'env' })).toBe('env');
    expect(resolveApiKey({ env: undefined })).toBeNull();
    expect(() => resolveApiKey({ flag: '', env: undefined })).toThrow(
      /--api-key: the API key is empty/,
    );
    expect(() => resolveApiKey({ env: ' ' })).toThrow(/MOESERVE_API_KEY.*empty/);
    writeFileSync(file, '\n');
    expect(() => resolveApiKey({ file, env: undefined })).toThrow(/empty/);
    expect(() => resolveApiKey({ file: join(dir, 'none'), env: undefined })).toThrow(/cannot read/);
    expect(() => resolveApiKey({ flag: 'a', file, env: undefined })).toThrow(/not both/);
    expect(() =>
      createServer({
        engine: null as never,
        tokenizer: fakeTokenizer,
        modelName: MODEL,
        chatTemplate: null,
        options: { apiKey: '' },
      }),
    ).toThrow(/empty/);
  });
});

describe('cross-site requests to a keyless server', () => {
  it('answers 415 to bodies that are not JSON', async () => {
    s = await startTestServer({ engine: { respond } });
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
    ]) {
      const r = await s.post('/v1/chat/completions', chatBody, { 'content-type': type });
      expect(r.status, type).toBe(415);
      const e = (await r.json()) as { error: { code: string } };
      expect(e.error.code).toBe('unsupported_media_type');
    }
    const charset = await s.post('/v1/chat/completions', chatBody, {
      'content-type': 'application/json; charset=utf-8',
    });
    expect(charset.status).toBe(200);
    expect(s.engine.requests).toHaveLength(1);
  });

  it('refuses a foreign Host on loopback (DNS rebinding) and foreign Origins', async () => {
    s = await startTestServer({ engine: { respond } });
    const rebound = await rawRequest(
      s.port,
      rawPost('/v1/chat/completions', chatBody).replace(
        'Host: 127.0.0.1',
        'Host: evil.example:8000',
      ),
    );
    expect(rebound.status).toBe(403);
    expect((rawJson(rebound) as { error: { code: string } }).error.code).toBe('forbidden_host');
    const cross = await s.post('/v1/chat/completions', chatBody, {
      origin: 'https://evil.example',
    });
    expect(cross.status).toBe(403);
    const local = await s.post('/v1/chat/completions', chatBody, {
      origin: 'http://localhost:3000',
    });
    expect(local.status).toBe(200);
    for (const host of ['localhost:1', '127.0.0.1', '[::1]:8000']) {
      const r = await rawRequest(
        s.port,
        rawPost('/health', '').replace('POST', 'GET').replace('Host: 127.0.0.1', `Host: ${host}`),
      );
      expect(r.status, host).not.toBe(403);
    }
    expect(s.engine.requests).toHaveLength(1);
  });

  it('takes --allowed-origins, and a key lifts the checks', async () => {
    s = await startTestServer({
      engine: { respond },
      options: { allowedOrigins: ['https://app.example'] },
    });
    expect(
      (await s.post('/v1/chat/completions', chatBody, { origin: 'https://app.example' })).status,
    ).toBe(200);
    expect(
      (await s.post('/v1/chat/completions', chatBody, { origin: 'http://localhost:1' })).status,
    ).toBe(403);
    await s.close();
    s = await startTestServer({ engine: { respond }, options: { apiKey: KEY } });
    const r = await s.post('/v1/chat/completions', chatBody, {
      origin: 'https://evil.example',
      authorization: `Bearer ${KEY}`,
    });
    expect(r.status).toBe(200);
  });
});

describe('framework errors and 500s', () => {
  it('answers malformed URLs, huge headers and odd model names in the OpenAI shape, never 500', async () => {
    s = await startTestServer({ engine: { respond } });
    const pct = await fetch(`${s.url}/v1/models/%25`);
    expect(pct.status).toBe(404);
    expect(((await pct.json()) as { error: { code: string } }).error.code).toBe('model_not_found');
    const bad = await rawRequest(
      s.port,
      'GET /v1/models/%zz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
    );
    expect(bad.status).toBe(400);
    expect((rawJson(bad) as { error: { type: string } }).error.type).toBe('invalid_request_error');
    const huge = await rawRequest(
      s.port,
      `GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    expect(huge.status).toBe(431);
    expect((rawJson(huge) as { error: { message: string } }).error.message).toMatch(/headers/);
    const garbage = await rawRequest(s.port, 'NOT HTTP AT ALL\r\n\r\n');
    expect(garbage.status).toBe(400);
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
  });

  it('logs every 500 even without --log-requests', async () => {
    const lines: string[] = [];
    s = await startTestServer({
      engine: { respond },
      options: { logError: (l) => lines.push(l) },
    });
    const r = await s.client.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'engine-error' }] })
      .catch((e: unknown) => e);
    expect(r).toBeInstanceOf(OpenAI.InternalServerError);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/POST \/v1\/chat\/completions -> 500: device lost/);
  });
});

describe('tool validation', () => {
  const tool = (name: string, parameters: unknown = { type: 'object' }) => ({
    type: 'function',
    function: { name, parameters },
  });
  const withTools = (
    tools: unknown[],
    messages: unknown[] = [{ role: 'user', content: 'hi' }],
  ) => ({
    model: MODEL,
    messages,
    tools,
  });

  it.each([
    [
      'an invalid JSON Schema',
      [tool('get_weather', { type: 'nonsense' })],
      'tools[0].function.parameters',
      /"get_weather".*not a valid JSON Schema/,
    ],
    ['a duplicate name', [tool('f'), tool('f')], 'tools[1].function.name', /given twice/],
    ['a name with markup', [tool('f<mm:think>')], 'tools[0].function.name', /is invalid/],
    ['a name that is too long', [tool('f'.repeat(65))], 'tools[0].function.name', /is invalid/],
  ])('refuses %s with 400 naming the tool', async (_what, tools, param, re) => {
    s ??= await startTestServer({ engine: { respond } });
    const r = await s.post('/v1/chat/completions', withTools(tools));
    expect(r.status).toBe(400);
    const e = (await r.json()) as { error: { param: string; message: string } };
    expect(e.error.param).toBe(param);
    expect(e.error.message).toMatch(re);
  });

  it('needs tool_call_id on tool messages', async () => {
    s = await startTestServer({ engine: { respond } });
    const msgs = [
      { role: 'user', content: 'hi' },
      { role: 'tool', content: '{"t": 1}' },
    ];
    const r = await s.post('/v1/chat/completions', withTools([tool('f')], msgs));
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { param: string } }).error.param).toBe(
      'messages[1].tool_call_id',
    );
    const ok = await s.post('/v1/chat/completions', {
      ...withTools([tool('f')], [msgs[0], { ...msgs[1], tool_call_id: 'call_0' }]),
      tool_choice: 'none', // the test server has no tool-call parser
    });
    expect(ok.status).toBe(200);
  });
});
