import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { GenerateRequest } from '../../src/engine/engine-types.js';
import { parseMetrics } from '../../src/tools/server-soak.js';
import { EOS_ID, fakeTokenizer, ids } from './fake-text.js';
import { MODEL, startTestServer, type TestServer, waitFor } from './harness.js';
import { rawPost, rawRequest, rawSocket } from './raw-http.js';

/** "flood" streams 200k tokens as fast as they are read; "slow" 200 tokens 10 ms apart. */
function respond(req: GenerateRequest) {
  const prompt = fakeTokenizer.decode(req.promptIds, { skipSpecialTokens: false });
  if (prompt.includes('flood')) return { tokens: ids('y'.repeat(200_000)), burst: true };
  if (prompt.includes('slow')) return { tokens: ids('z'.repeat(200)), delayMs: 10 };
  if (prompt.includes('long')) return { tokens: ids('ab'.repeat(1000)), burst: true };
  return { tokens: [...ids('ok'), EOS_ID] };
}

let s: TestServer | null = null;
afterEach(async () => {
  await s?.close();
  s = null;
});

const user = (content: string) => [{ role: 'user' as const, content }];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Another client's short greedy request: its answer and how long it took. */
async function probe(t: TestServer): Promise<{ text: string | null; ms: number }> {
  const t0 = Date.now();
  const r = await t.client.chat.completions.create({
    model: MODEL,
    messages: user('hi'),
    temperature: 0,
  });
  return { text: r.choices[0]!.message.content, ms: Date.now() - t0 };
}

async function metric(t: TestServer, series: string): Promise<number> {
  const m = parseMetrics(await (await fetch(`${t.url}/metrics`)).text());
  return m.get(series) ?? 0;
}

describe('admission limits', () => {
  it('refuses 64 prompts × n 128 at once, in a few ms and without memory growth', async () => {
    s = await startTestServer({ engine: { respond, maxModelLen: 4096 } });
    const heap0 = process.memoryUsage().heapUsed;
    const body = { model: MODEL, prompt: Array.from({ length: 64 }, () => 'x'), n: 128 };
    const r = await s.post('/v1/completions', body);
    expect(r.status).toBe(400);
    const e = (await r.json()) as { error: { code: string; param: string; message: string } };
    expect(e.error.code).toBe('too_many_choices');
    expect(e.error.message).toMatch(/8192 choices/);
    expect(s.engine.requests).toHaveLength(0);
    expect(process.memoryUsage().heapUsed - heap0).toBeLessThan(64 * 2 ** 20);
    expect((await probe(s)).text).toBe('ok');
  });

  it('caps sequences in flight over all requests with a 429', async () => {
    s = await startTestServer({ engine: { respond }, options: { maxPendingSeqs: 8 } });
    const big = s.client.completions.create({ model: MODEL, prompt: 'slow', n: 6, max_tokens: 20 });
    await waitFor(() => s!.engine.running === 6);
    const more = await s.client.completions
      .create({ model: MODEL, prompt: 'x', n: 3 })
      .catch((err: unknown) => err);
    expect(more).toBeInstanceOf(OpenAI.RateLimitError);
    expect((await probe(s)).text).toBe('ok'); // 1 more fits
    await big;
    expect(s.engine.running).toBe(0);
    const r = await s.client.completions.create({ model: MODEL, prompt: 'x', n: 8 });
    expect(r.choices).toHaveLength(8);
  });

  it('refuses an answer that would need more memory than --max-request-memory-mb', async () => {
    s = await startTestServer({
      engine: { respond, maxModelLen: 100_000 },
      options: { maxRequestMemoryBytes: 64 * 2 ** 20 },
    });
    const r = await s.post('/v1/completions', {
      model: MODEL,
      prompt: 'x',
      n: 128,
      max_tokens: 50_000,
      logprobs: 20,
    });
    expect(r.status).toBe(400);
    const e = (await r.json()) as { error: { code: string; param: string } };
    expect(e.error).toMatchObject({ code: 'request_too_large', param: 'max_tokens' });
    // Streamed, the same request holds no whole answer, so it is admitted.
    const ok = await s.post('/v1/completions', {
      model: MODEL,
      prompt: 'x',
      n: 2,
      max_tokens: 4,
      stream: true,
    });
    expect(ok.status).toBe(200);
    await ok.text();
  });

  it('refuses an over-long prompt before tokenizing it, in bounded time', async () => {
    s = await startTestServer({ engine: { respond, maxModelLen: 256 } });
    let encoded = 0;
    const encode = fakeTokenizer.encode;
    Object.assign(fakeTokenizer, {
      encode: (t: string, o: { addSpecialTokens: boolean }) => {
        encoded += t.length;
        return encode(t, o);
      },
    });
    try {
      const huge = 'w'.repeat(8 * 2 ** 20);
      const t0 = Date.now();
      const tasks = [
        s.post('/v1/completions', { model: MODEL, prompt: huge }),
        s.post('/v1/chat/completions', { model: MODEL, messages: user(huge) }),
        s.post('/tokenize', { model: MODEL, prompt: huge }),
      ];
      for (const r of await Promise.all(tasks)) {
        expect(r.status).toBe(400);
        expect(((await r.json()) as { error: { code: string } }).error.code).toBe(
          'context_length_exceeded',
        );
      }
      expect(encoded).toBe(0);
      expect(Date.now() - t0).toBeLessThan(10_000);
    } finally {
      Object.assign(fakeTokenizer, { encode });
    }
  });

  it('refuses stop strings past --max-stop-string-chars and matches long ones in linear time', async () => {
    s = await startTestServer({ engine: { respond, maxModelLen: 4096 } });
    const tooLong = await s.post('/v1/completions', {
      model: MODEL,
      prompt: 'x',
      stop: ['a'.repeat(1025)],
    });
    expect(tooLong.status).toBe(400);
    expect(((await tooLong.json()) as { error: { param: string } }).error.param).toBe('stop');
    // 64 adversarial stops of 1024 chars over 2000 tokens of "abab…": every prefix is live.
    const stops = Array.from(
      { length: 64 },
      (_, i) => 'ab'.repeat(511) + 'a' + String.fromCharCode(99 + i),
    );
    const t0 = Date.now();
    const r = await s.client.completions.create({
      model: MODEL,
      prompt: 'long',
      max_tokens: 2000,
      stop: stops,
    });
    expect(r.choices[0]!.text).toBe('ab'.repeat(1000));
    // Quadratic matching took tens of seconds here; linear takes well under one.
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});

describe('slow and stalled clients', () => {
  it('closes a connection that sends its headers or body too slowly', async () => {
    s = await startTestServer({
      engine: { respond },
      options: { headersTimeoutMs: 500, requestTimeoutMs: 1000 },
    });
    const silent = await rawSocket(s.port);
    const silentClosed = new Promise<number>((r) => {
      const t0 = Date.now();
      silent.on('close', () => r(Date.now() - t0));
    });
    silent.on('error', () => {});
    silent.resume();
    const drip = await rawSocket(s.port);
    drip.on('error', () => {});
    drip.resume(); // reads, so the server's close is seen
    const t0 = Date.now();
    const req = rawPost(
      '/v1/chat/completions',
      JSON.stringify({ model: MODEL, messages: user('x') }),
    );
    let i = 0;
    const timer = setInterval(() => {
      if (!drip.destroyed && i < req.length) drip.write(req[i++]!);
    }, 50);
    const dripClosed = new Promise<number>((r) => drip.on('close', () => r(Date.now() - t0)));
    try {
      expect(await silentClosed).toBeLessThan(3000);
      expect(await dripClosed).toBeLessThan(4000);
    } finally {
      clearInterval(timer);
    }
    expect(i).toBeLessThan(req.length);
    expect((await probe(s)).text).toBe('ok');
  });

  it('aborts a stream whose client stops reading, after --timeout-stall', async () => {
    s = await startTestServer({
      engine: { respond, maxModelLen: 400_000 },
      options: { stallTimeoutMs: 500 },
    });
    const sock = await rawSocket(s.port);
    sock.on('error', () => {});
    sock.pause(); // never reads: the socket buffers fill and the server cannot write
    sock.write(
      rawPost('/v1/completions', JSON.stringify({ model: MODEL, prompt: 'flood', stream: true })),
    );
    await waitFor(() => s!.engine.running === 1);
    const t0 = Date.now();
    await waitFor(() => s!.engine.running === 0, 15_000);
    expect(s.engine.finished).toHaveLength(0); // cut off, not run to its end
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect((await probe(s)).ms).toBeLessThan(2000);
    sock.destroy();
    await waitFor(() => s!.engine.running === 0);
  });

  it('counts tokens and the finish of a disconnected request', async () => {
    s = await startTestServer({ engine: { respond } });
    const ac = new AbortController();
    const r = s.post('/v1/completions', { model: MODEL, prompt: 'slow', max_tokens: 100 });
    void r;
    const stream = await s.client.completions.create(
      { model: MODEL, prompt: 'slow', max_tokens: 100, stream: true },
      { signal: ac.signal },
    );
    let got = 0;
    for await (const c of stream) {
      got += c.choices[0]?.text.length ?? 0;
      if (got >= 5) break;
    }
    await waitFor(() => s!.engine.aborted.length === 1);
    await r;
    await sleep(50);
    expect(await metric(s, 'moeserve_request_finish_total{finish_reason="abort"}')).toBe(1);
    const tokens = await metric(s, 'moeserve_generation_tokens_total');
    expect(tokens).toBeGreaterThanOrEqual(100 + 5);
    expect(tokens).toBeLessThan(100 + 60);
  });
});

describe('shutdown', () => {
  it('answers 503 while draining and ends in bounded time whatever clients do', async () => {
    s = await startTestServer({
      engine: { respond, maxModelLen: 400_000 },
      options: { shutdownTimeoutMs: 1000, requestTimeoutMs: 60_000, headersTimeoutMs: 60_000 },
    });
    const t = s;
    // A slowloris client, a client that never reads, and a long generation.
    const loris = await rawSocket(t.port);
    loris.on('error', () => {});
    loris.write('POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{');
    const stalled = await rawSocket(t.port);
    stalled.on('error', () => {});
    stalled.pause();
    stalled.write(
      rawPost('/v1/completions', JSON.stringify({ model: MODEL, prompt: 'flood', stream: true })),
    );
    const long = t.client.completions
      .create({ model: MODEL, prompt: 'slow', max_tokens: 200 })
      .catch((e: unknown) => e);
    await waitFor(() => t.engine.running === 2);
    const t0 = Date.now();
    const closing = t.app.drainAndClose(1000);
    await sleep(50);
    const during = await rawRequest(t.port, 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    expect(during.status).toBe(503);
    await closing;
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(await long).toBeInstanceOf(Error);
    await waitFor(() => t.engine.running === 0);
    s = null;
  });
});
