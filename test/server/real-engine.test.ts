import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createEngineFromModelDir,
  type EngineFactoryOptions,
} from '../../src/cli/serve-command.js';
import { createServer } from '../../src/server/http-server.js';
import type { ServerTokenizer } from '../../src/server/server-deps.js';
import { parseMetrics } from '../../src/tools/server-soak.js';
import { goldenCase } from '../golden-dir.js';

// The server over the real LlmEngine and MiniMax-M3 forward (CPU, the golden tiny-moe
// checkpoint), end to end over HTTP: the engine invariances must survive the server.
const DIR = goldenCase('tiny-moe');

/** Token id i <-> the character U+0100+i, so text round-trips ids exactly (vocab 256). */
const idTokenizer: ServerTokenizer = {
  vocabSize: 256,
  maxCharsPerToken: 1,
  specialTokens: [],
  encode: (text) => [...text].map((c) => c.charCodeAt(0) - 0x100),
  encodeAsync: async (text) => [...text].map((c) => c.charCodeAt(0) - 0x100),
  decode: (ids) => String.fromCharCode(...ids.map((i) => 0x100 + i)),
  createDecoder: () => ({
    feed: (ids) => idTokenizer.decode(ids, { skipSpecialTokens: false }),
    flush: () => '',
  }),
};
const text = (ids: number[]) => idTokenizer.decode(ids, { skipSpecialTokens: false });
const prompt = (seed: number, len: number) =>
  text(Array.from({ length: len }, (_, i) => (seed * 31 + i * 17 + ((i * i) % 7)) % 250));

interface Served {
  client: OpenAI;
  url: string;
  close: () => Promise<void>;
}

async function serve(o: Partial<EngineFactoryOptions> = {}, routed = false): Promise<Served> {
  const serving = await createEngineFromModelDir(DIR, {
    backend: 'cpu',
    maxModelLen: 256,
    numPages: 96,
    ...o,
  });
  const app = createServer({
    ...serving,
    tokenizer: idTokenizer,
    chatTemplate: null,
    modelName: 'tiny',
    options: { processMetrics: false, returnRoutedExperts: routed },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return {
    client: new OpenAI({ baseURL: `${url}/v1`, apiKey: 'x', maxRetries: 0 }),
    url,
    close: async () => {
      await app.close();
      await serving.engine.shutdown();
    },
  };
}

const greedy = { model: 'tiny', temperature: 0, max_tokens: 10, ignore_eos: true } as const;

async function complete(s: Served, p: string) {
  const r = await s.client.completions.create({ ...greedy, prompt: p });
  return { text: r.choices[0]!.text, cached: r.usage!.prompt_tokens_details?.cached_tokens ?? 0 };
}

describe.skipIf(!existsSync(DIR))('server over the real engine (tiny MiniMax-M3, CPU)', () => {
  const prompts = Array.from({ length: 6 }, (_, i) => prompt(i, 5 + 9 * i));
  let main: Served;
  let chunked: Served;
  let sequential: string[];
  beforeAll(async () => {
    main = await serve({}, true);
    chunked = await serve({ maxNumBatchedTokens: 5 });
    sequential = [];
    for (const p of prompts) sequential.push((await complete(main, p)).text);
  });
  afterAll(async () => {
    await main.close();
    await chunked.close();
  });

  it('gives batched requests the one-at-a-time greedy tokens', async () => {
    const batched = await Promise.all(prompts.map((p) => complete(main, p)));
    expect(batched.map((b) => b.text)).toEqual(sequential);
    expect(sequential.every((t) => t.length === 10)).toBe(true);
  });

  it('gives chunked prefill the whole-prefill tokens', async () => {
    const out = await Promise.all(prompts.map((p) => complete(chunked, p)));
    expect(out.map((b) => b.text)).toEqual(sequential);
  });

  it('gives a prefix-cache hit the same tokens as a miss', async () => {
    const base = prompt(9, 40);
    const longer = base + prompt(10, 6);
    const fresh = await serve();
    try {
      const miss = await complete(fresh, longer);
      expect(miss.cached).toBe(0);
      await complete(main, base);
      const hit = await complete(main, longer);
      expect(hit.cached).toBeGreaterThan(0);
      expect(hit.text).toBe(miss.text);
    } finally {
      await fresh.close();
    }
  });

  it('flushes the prefix cache on POST /flush_cache and /reset_prefix_cache', async () => {
    const p = prompt(11, 40);
    await complete(main, p);
    expect((await complete(main, p)).cached).toBeGreaterThan(0);
    for (const path of ['/flush_cache', '/reset_prefix_cache']) {
      const r = await fetch(`${main.url}${path}`, { method: 'POST' });
      expect(r.status).toBe(200);
      expect((await complete(main, p)).cached).toBe(0);
    }
  });

  it('returns the routed experts of every generated token (top-2 of 8, MoE layers 1-3)', async () => {
    const r = (await main.client.completions.create({
      ...greedy,
      prompt: prompts[2]!,
      // @ts-expect-error extension field
      return_routed_experts: true,
    })) as unknown as { choices: { text: string; routed_experts: Record<string, number[][]> }[] };
    const routed = r.choices[0]!.routed_experts;
    expect(Object.keys(routed).sort()).toEqual(['1', '2', '3']);
    for (const rows of Object.values(routed)) {
      expect(rows).toHaveLength(10);
      for (const row of rows) {
        expect(row).toHaveLength(2);
        expect(row.every((e) => e >= 0 && e < 8)).toBe(true);
      }
    }
    expect(r.choices[0]!.text).toBe(sequential[2]);
  });

  it('streams the same tokens as the non-streaming answer', async () => {
    const stream = await main.client.completions.create({
      ...greedy,
      prompt: prompts[3]!,
      stream: true,
    });
    let out = '';
    for await (const c of stream) out += c.choices[0]?.text ?? '';
    expect(out).toBe(sequential[3]);
  });

  it('frees every KV page after streams are dropped mid-way', async () => {
    await Promise.all(
      prompts.map(async (p) => {
        const stream = await main.client.completions.create({
          ...greedy,
          max_tokens: 200,
          prompt: p,
          stream: true,
        });
        let n = 0;
        for await (const _c of stream) if (++n === 3) break;
      }),
    );
    const deadline = Date.now() + 5000;
    let m = parseMetrics(await (await fetch(`${main.url}/metrics`)).text());
    while (
      (m.get('moeserve_num_requests_running') !== 0 || m.get('moeserve_kv_pages_used') !== 0) &&
      Date.now() < deadline
    ) {
      await new Promise((r) => setTimeout(r, 20));
      m = parseMetrics(await (await fetch(`${main.url}/metrics`)).text());
    }
    expect(m.get('moeserve_num_requests_running')).toBe(0);
    expect(m.get('moeserve_kv_pages_used')).toBe(0);
  });
});
