import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Script, ScriptedRequest } from '../bench/scripted-reply.js';
import { ScriptedServer } from '../bench/scripted-server.js';
import type { Gsm8kItem } from './gsm8k-dataset.js';
import { runStopRate } from './stop-rate.js';

const items: Gsm8kItem[] = Array.from({ length: 10 }, (_, i) => ({
  question: `Q${i}: what is ${i}?`,
  answer: `It is ${i}.\n#### ${i}`,
}));

function questionIdx(req: ScriptedRequest): number {
  const msgs = req.body['messages'] as { content: string }[];
  return Number(/^Q(\d+)/.exec(msgs[0]?.content ?? '')?.[1]);
}

/** 7 stops (one wrong), 2 runaways with only reasoning, 1 server error (unless healed). */
const mix =
  (healed = false): Script =>
  (req) => {
    const i = questionIdx(req);
    if (i === 8 && !healed) return { status: 500 };
    if (i === 3 || i === 7)
      return {
        reasoning: ['think '.repeat(50)],
        content: [],
        tokensPerChunk: 512,
        finishReason: 'length',
      };
    return { content: [`Reasoning.\n#### ${i === 5 ? 999 : i}`], tokensPerChunk: 10 * (i + 1) };
  };

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function run(script: Script, output: string) {
  server = await ScriptedServer.start(script);
  return runStopRate({
    endpoint: { baseUrl: server.url, timeoutMs: 5000 },
    model: 'm',
    items,
    output,
    maxTokens: 512,
    concurrency: 3,
    temperature: 0,
  });
}

describe('eval stop-rate', () => {
  it('writes the exact summary for a scripted mix of finish reasons', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'stop-')), 'smoke.jsonl');
    const s = await run(mix(), out);
    expect(s).toMatchObject({
      n_total: 10,
      n_ok: 9,
      n_err: 1,
      finish_counts: { stop: 7, length: 2 },
      stop_rate_pct: 77.78,
      runaway_rate_pct: 22.22,
      ct_p50: 60,
      ct_p99: 512,
      ct_max: 512,
      gsm8k_acc_pct: 66.67,
      n_empty_content: 0,
    });
    expect(s.runaways).toEqual([
      {
        idx: 3,
        finish_reason: 'length',
        completion_tokens: 512,
        reasoning_len: 300,
        content_len: 0,
      },
      {
        idx: 7,
        finish_reason: 'length',
        completion_tokens: 512,
        reasoning_len: 300,
        content_len: 0,
      },
    ]);
    expect(s.errors[0]).toMatch(/^#8: .*HTTP 500/);
    const onDisk = JSON.parse(readFileSync(`${out}.summary.json`, 'utf8')) as unknown;
    expect(onDisk).toEqual(s);
    const body = server?.requests[0]?.body;
    expect(body?.['max_tokens']).toBe(512);
  });

  it('resumes without redoing finished requests and retries failed ones', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'stop-')), 'resume.jsonl');
    await run(mix(), out);
    await server?.close();
    // An interrupted writer leaves a torn last line behind.
    appendFileSync(out, '{"idx": 4, "gold": "4", "fin');
    const s = await run(mix(true), out);
    expect(server?.requests.map(questionIdx)).toEqual([8]);
    expect(s.n_err).toBe(0);
    expect(s.n_ok).toBe(10);
    expect(s.finish_counts).toEqual({ stop: 8, length: 2 });
  });
});
