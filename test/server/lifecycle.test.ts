import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { GenerateRequest } from '../../src/engine/engine-types.js';
import { EOS_ID, fakeTokenizer, ids } from './fake-text.js';
import { MODEL, startTestServer, type TestServer, waitFor } from './harness.js';

/** "say:<text>" answers <text>; "slow" answers 200 tokens; anything else a short greeting. */
function respond(req: GenerateRequest) {
  const prompt = fakeTokenizer.decode(req.promptIds, { skipSpecialTokens: false });
  if (prompt.includes('slow')) return { tokens: ids('z'.repeat(200)), delayMs: 10 };
  const m = /say:([^<]*)/.exec(prompt);
  return { tokens: [...ids(m ? m[1]! : 'hello'), EOS_ID] };
}

const user = (content: string) => [{ role: 'user' as const, content }];

let s: TestServer | null = null;
afterEach(async () => {
  await s?.close();
  s = null;
});

async function readAll(stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>) {
  let text = '';
  let finish: string | null = null;
  for await (const c of stream) {
    text += c.choices[0]?.delta.content ?? '';
    finish = c.choices[0]?.finish_reason ?? finish;
  }
  return { text, finish };
}

describe('concurrency', () => {
  it('serves 32 concurrent streams, each with its own text', async () => {
    s = await startTestServer({ engine: { respond, delayMs: 10 } });
    const client = s.client;
    const results = await Promise.all(
      Array.from({ length: 32 }, async (_, i) => {
        const stream = await client.chat.completions.create({
          model: MODEL,
          messages: user(`say:stream number ${i} done`),
          stream: true,
        });
        return readAll(stream);
      }),
    );
    results.forEach((r, i) =>
      expect(r).toEqual({ text: `stream number ${i} done`, finish: 'stop' }),
    );
    expect(s.engine.maxRunning).toBeGreaterThanOrEqual(16);
    expect(s.engine.running).toBe(0);
    expect(s.engine.pagesUsed).toBe(0);
  });

  it('answers 429 past --max-concurrent-requests, then serves again', async () => {
    s = await startTestServer({ engine: { respond }, options: { maxConcurrentRequests: 2 } });
    const a = s.client.chat.completions.create({
      model: MODEL,
      messages: user('slow'),
      max_tokens: 20,
    });
    const b = s.client.chat.completions.create({
      model: MODEL,
      messages: user('slow'),
      max_tokens: 20,
    });
    await waitFor(() => s!.engine.running === 2);
    const err = await s.client.chat.completions
      .create({ model: MODEL, messages: user('hi') })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    await Promise.all([a, b]);
    const ok = await s.client.chat.completions.create({ model: MODEL, messages: user('hi') });
    expect(ok.choices[0]!.message.content).toBe('hello');
  });
});

describe('abort', () => {
  it('aborts the engine request when a streaming client goes away', async () => {
    s = await startTestServer({ engine: { respond } });
    const stream = await s.client.chat.completions.create({
      model: MODEL,
      messages: user('slow'),
      stream: true,
    });
    let chunks = 0;
    for await (const _c of stream) {
      if (++chunks === 4) break; // leaving the loop aborts the HTTP request
    }
    const id = s.engine.requests[0]!.id;
    await waitFor(() => s!.engine.aborted.includes(id));
    await waitFor(() => s!.engine.running === 0 && s!.engine.pagesUsed === 0);
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).toMatch(/moeserve_http_requests_in_flight 0/);
    expect(metrics).toMatch(
      /moeserve_http_requests_total\{endpoint="\/v1\/chat\/completions",status="499"\} 1/,
    );
  });

  it('aborts the engine request when a non-streaming client goes away, and only that one', async () => {
    s = await startTestServer({ engine: { respond } });
    const ac = new AbortController();
    const other = s.post('/v1/completions', { model: MODEL, prompt: 'slow', max_tokens: 40 });
    const r = fetch(`${s.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: 'slow' }),
      signal: ac.signal,
    }).catch((e: unknown) => e);
    await waitFor(() => s!.engine.running === 2);
    ac.abort();
    await r;
    await waitFor(() => s!.engine.aborted.length === 1);
    expect(s.engine.running).toBe(1);
    const res = await other;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: { text: string }[] }).choices[0]!.text).toBe(
      'z'.repeat(40),
    );
  });
});

describe('API key', () => {
  it('requires the key on /v1 only', async () => {
    s = await startTestServer({ engine: { respond }, options: { apiKey: 'sekret' } });
    const ok = await s.client.chat.completions.create({ model: MODEL, messages: user('hi') });
    expect(ok.choices[0]!.message.content).toBe('hello');
    const wrong = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'nope', maxRetries: 0 });
    const err = await wrong.models.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    const none = await fetch(`${s.url}/v1/models`);
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('invalid_api_key');
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    expect((await fetch(`${s.url}/metrics`)).status).toBe(200);
  });
});

describe('graceful shutdown', () => {
  it('finishes in-flight streams, refuses new requests, then closes', async () => {
    s = await startTestServer({ engine: { respond } });
    const server = s;
    const streams = await Promise.all(
      [0, 1, 2].map(() =>
        server.client.chat.completions.create({
          model: MODEL,
          messages: user('slow'),
          max_tokens: 30,
          stream: true,
        }),
      ),
    );
    const reads = streams.map((st) => readAll(st));
    await waitFor(() => server.engine.running === 3);
    let closed = false;
    const closing = server.app.close().then(() => (closed = true));
    await new Promise((r) => setTimeout(r, 30));
    expect(closed).toBe(false);
    const refused = await fetch(`${server.url}/health`).then(
      (r) => r.status,
      () => 'refused',
    );
    expect([503, 'refused']).toContain(refused);
    const results = await Promise.all(reads);
    for (const r of results) expect(r).toEqual({ text: 'z'.repeat(30), finish: 'length' });
    await closing;
    expect(closed).toBe(true);
    expect(server.engine.aborted).toEqual([]);
    s = null;
  });
});

describe('metrics', () => {
  it('exposes request, token, latency and engine series', async () => {
    s = await startTestServer({ engine: { respond, delayMs: 1 } });
    await s.client.chat.completions.create({ model: MODEL, messages: user('say:abc') });
    await s.client.completions.create({ model: MODEL, prompt: 'say:de', max_tokens: 2 });
    await s.post('/v1/chat/completions', '{oops');
    const r = await fetch(`${s.url}/metrics`);
    expect(r.headers.get('content-type')).toMatch(/text\/plain/);
    const m = await r.text();
    const value = (series: string) => {
      const line = m.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.slice(series.length + 1));
    };
    expect(
      value('moeserve_http_requests_total{endpoint="/v1/chat/completions",status="200"}'),
    ).toBe(1);
    expect(
      value('moeserve_http_requests_total{endpoint="/v1/chat/completions",status="400"}'),
    ).toBe(1);
    expect(value('moeserve_http_requests_total{endpoint="/v1/completions",status="200"}')).toBe(1);
    expect(value('moeserve_prompt_tokens_total')).toBe('<|user|>say:abc<|assistant|>'.length + 6);
    expect(value('moeserve_generation_tokens_total')).toBe(4 + 2);
    expect(value('moeserve_request_finish_total{finish_reason="stop"}')).toBe(1);
    expect(value('moeserve_request_finish_total{finish_reason="length"}')).toBe(1);
    expect(value('moeserve_time_to_first_token_seconds_count')).toBe(2);
    expect(value('moeserve_time_per_output_token_seconds_count')).toBe(2);
    expect(value('moeserve_e2e_request_latency_seconds_count')).toBe(2);
    expect(value('moeserve_kv_pages_total')).toBe(1024);
    expect(value('moeserve_kv_pages_used')).toBe(0);
    expect(value('moeserve_kv_cache_usage_ratio')).toBe(0);
    expect(value('moeserve_num_requests_running')).toBe(0);
    expect(value('moeserve_num_requests_waiting')).toBe(0);
    expect(value('moeserve_prefix_cache_hit_tokens_total')).toBe(7);
  });

  it('shows KV usage and running requests while generating', async () => {
    s = await startTestServer({ engine: { respond } });
    const stream = await s.client.chat.completions.create({
      model: MODEL,
      messages: user('slow'),
      max_tokens: 20,
      stream: true,
    });
    const reading = readAll(stream);
    await waitFor(() => s!.engine.running === 1);
    const m = await (await fetch(`${s.url}/metrics`)).text();
    expect(m).toMatch(/moeserve_num_requests_running 1/);
    expect(m).toMatch(/moeserve_http_requests_in_flight 1/);
    expect(m).not.toMatch(/moeserve_kv_pages_used 0\n/);
    await reading;
  });
});
