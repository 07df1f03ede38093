import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { parseReasoning } from '../server/parsers/reasoning-parser.js';
import { parseToolCalls } from '../server/parsers/tool-call-parser.js';
import {
  conversation,
  questionOf,
  QUESTION_SUFFIXES,
  trainingSamples,
  type TrainingSample,
} from './dataset.js';
import { generateData } from './gen-data.js';
import { Rng } from './rng.js';

const NS = ']<]minimax[>[';

function samples(seed: number, n: number): TrainingSample[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, () => trainingSamples(conversation(rng))).flat();
}

/** A small reading of the M3 tool-call block, independent of the generator's writer. */
function parseCall(text: string): { name: string; args: Record<string, string> } | null {
  const m = /<invoke name="([^"]+)">(.*?)<\/invoke>/s.exec(text.split(NS).join(''));
  if (!m) return null;
  const args: Record<string, string> = {};
  for (const p of (m[2] ?? '').matchAll(/<([a-z_]+)>(.*?)<\/\1>/gs)) args[p[1] ?? ''] = p[2] ?? '';
  return { name: m[1] ?? '', args };
}

describe('training samples', () => {
  it('are reproducible for a seed', () => {
    expect(samples(5, 50)).toEqual(samples(5, 50));
    expect(samples(5, 50)).not.toEqual(samples(6, 50));
  });

  it('are whole M3 turns: prompt ends at the ai header, completion ends with [e~[', () => {
    for (const s of samples(11, 400)) {
      expect(s.prompt.startsWith(']~!b[]~b]system\n')).toBe(true);
      expect(s.prompt.endsWith('[e~[\n]~b]ai\n')).toBe(true);
      expect(s.completion.startsWith('<mm:think>')).toBe(true);
      expect(s.completion.endsWith('[e~[')).toBe(true);
      expect(s.completion.split('[e~[').length).toBe(2);
      expect(s.completion.split('</mm:think>').length).toBe(2);
    }
  });

  it('carry tool calls that parse back to the arguments the tool result answers', () => {
    const rng = new Rng(21);
    let n = 0;
    for (let i = 0; i < 300; i++) {
      const c = conversation(rng);
      if (c.kind !== 'tool') continue;
      n++;
      const [call, answer] = trainingSamples(c);
      const parsed = parseCall(call?.completion ?? '');
      const want = c.turn.toolCalls?.[0];
      expect(parsed?.name).toBe(want?.name);
      expect(parsed?.args).toEqual(
        Object.fromEntries(Object.entries(want?.arguments ?? {}).map(([k, v]) => [k, String(v)])),
      );
      expect(answer?.prompt).toContain(`]~b]tool\n<response>${c.toolResult}</response>[e~[\n`);
      expect(answer?.prompt).toContain(`</mm:think>${NS}<tool_call>`);
    }
    expect(n).toBeGreaterThan(50);
  });
});

describe('training completions through the server parsers', () => {
  it('split into reasoning and content, and tool calls parse with schema-typed arguments', () => {
    const rng = new Rng(33);
    let calls = 0;
    for (let i = 0; i < 300; i++) {
      const c = conversation(rng);
      const [first] = trainingSamples(c);
      const text = (first?.completion ?? '').replace(/\[e~\[$/, '');
      const split = parseReasoning(text);
      expect(split.reasoning).toBe(c.turn.reasoning);
      if (c.kind !== 'tool') {
        expect(split.content).toBe(c.turn.content);
        continue;
      }
      calls++;
      const parsed = parseToolCalls(split.content, c.tools ?? []);
      expect(parsed.content.trim()).toBe('');
      expect(parsed.toolCalls.map((t) => t.function.name)).toEqual([c.turn.toolCalls?.[0]?.name]);
      expect(JSON.parse(parsed.toolCalls[0]?.function.arguments ?? '')).toEqual(
        c.turn.toolCalls?.[0]?.arguments,
      );
    }
    expect(calls).toBeGreaterThan(50);
  });
});

describe('generateData', () => {
  it('writes the training, held-out and GSM8K-style files, keeping held-out questions out', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gen-data-'));
    try {
      const m = await generateData({ outDir: dir, seed: 3, numTrain: 400, numHeldout: 30 });
      expect(m.heldoutByKind).toEqual({ arithmetic: 30, tool: 30, chat: 6 });
      const train = gunzipSync(await readFile(join(dir, 'train.jsonl.gz')))
        .toString()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as TrainingSample);
      expect(train.length).toBe(Object.values(m.trainSamplesByKind).reduce((a, b) => a + b, 0));
      const gsm = (await readFile(join(dir, 'heldout-gsm8k.jsonl'), 'utf8')).trim().split('\n');
      expect(gsm.length).toBe(30);
      for (const line of gsm) {
        const r = JSON.parse(line) as { question: string; answer: string };
        expect(r.answer).toMatch(/\n#### \d+$/);
        expect(train.some((s) => s.prompt.includes(`user\n${r.question}[e~[`))).toBe(false);
      }
      const tools = (await readFile(join(dir, 'heldout-tools.jsonl'), 'utf8')).trim().split('\n');
      const rec = JSON.parse(tools[0] ?? '{}') as Record<string, unknown>;
      expect(Object.keys(rec)).toEqual(
        expect.arrayContaining(['messages', 'tools', 'answer', 'tool_result', 'final_answer']),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('eval instruction suffixes', () => {
  it('appear on some arithmetic questions and are stripped from the held-out key', () => {
    const rng = new Rng(8);
    let withSuffix = 0;
    for (let i = 0; i < 400; i++) {
      const c = conversation(rng);
      const last = c.messages[c.messages.length - 1]?.content ?? '';
      if (c.kind !== 'arithmetic' || last === questionOf(c)) continue;
      withSuffix++;
      expect(QUESTION_SUFFIXES.some((s) => last === questionOf(c) + s)).toBe(true);
    }
    expect(withSuffix).toBeGreaterThan(20);
  });
});
