import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR } from '../../src/cli/serve-command.js';
import { createServer } from '../../src/server/http-server.js';
import { adaptTokenizer } from '../../src/server/text-adapters.js';
import { loadTokenizer } from '../../src/tokenizer/load-tokenizer.js';
import { FakeEngine } from './fake-engine.js';
import { fakeChatTemplate } from './fake-text.js';

// A 3 MB prompt takes the bundled tokenizer most of a second of BPE; it must be
// tokenized in event-loop turns, so that /health (and every other client) is served meanwhile.
const tok = loadTokenizer(BUNDLED_MODEL_DIR);
const app = createServer({
  // A context long enough that the length pre-check lets 3 MB through to the tokenizer.
  engine: new FakeEngine({ maxModelLen: 1_000_000 }),
  tokenizer: adaptTokenizer(tok),
  modelName: 'tiny',
  chatTemplate: fakeChatTemplate,
  options: { processMetrics: false },
});
let url = '';
beforeAll(async () => {
  await app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});
afterAll(() => app.close());

/**
 * fetch, once more when the pooled keep-alive socket it picked was closed by the server as it
 * was reused (ECONNRESET before any response: seen after the 12-17 s first case on an idle
 * 2-core machine); a reset of a request the server had answered is not retried.
 */
async function fetchOnce(input: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(input, init);
  } catch (e) {
    const code = ((e as Error).cause as { code?: string } | undefined)?.code;
    if (code !== 'ECONNRESET') throw e;
    return fetch(input, init);
  }
}

function bigText(chars: number): string {
  const words = ['The quick brown fox', 'jumps over', 'the lazy dog.', 'Ünïcödé 数学', '3.14159'];
  let out = '';
  for (let i = 0; out.length < chars; i++) out += `${words[i % words.length]} ${i} `;
  return out;
}

/**
 * Probes GET /health back to back until `done` settles; for each probe, the time since the
 * previous one finished. The server shares this process's event loop, so a blocking
 * tokenization shows up as one long gap whether or not a probe was in flight during it.
 */
async function probeWhile(done: Promise<unknown>): Promise<number[]> {
  let settled = false;
  void done.finally(() => (settled = true));
  const gaps: number[] = [];
  let last = performance.now();
  while (!settled) {
    const r = await fetchOnce(`${url}/health`);
    expect(r.status).toBe(200);
    await r.arrayBuffer();
    const now = performance.now();
    gaps.push(now - last);
    last = now;
    await new Promise((r) => setTimeout(r, 5));
  }
  return gaps;
}

async function tokenize(body: unknown): Promise<number[]> {
  const r = await fetchOnce(`${url}/tokenize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(r.status).toBe(200);
  return ((await r.json()) as { tokens: number[] }).tokens;
}

describe('tokenizing a multi-megabyte prompt', () => {
  const text = bigText(3_000_000);

  it.each([
    ['prompt', { model: 'tiny', prompt: text }, () => tok.encode(text)],
    [
      'messages',
      { model: 'tiny', messages: [{ role: 'user', content: text }] },
      () => tok.encode(`<|user|>${text}<|assistant|>`, { addSpecialTokens: false }),
    ],
  ])('leaves /health answering (%s)', async (_name, body, expected) => {
    const req = tokenize(body);
    const gaps = await probeWhile(req);
    const ids = await req;
    expect(ids).toEqual(expected());
    // Probes kept being answered while the request was tokenized: no gap near the whole
    // tokenization (tokenizing synchronously gives one gap of ~1.1 s here; with turns the
    // largest is ~70-115 ms, mostly the 3M-id response's JSON on both ends, but 320 ms was seen
    // for messages in a full-suite run: template rendering and special-token matching are
    // single passes). The bound sits between the two.
    expect(gaps.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...gaps)).toBeLessThan(600);
  });
});
