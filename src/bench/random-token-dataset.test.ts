import { describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR } from '../config/bundled-model.js';
import { loadTokenizer } from '../tokenizer/load-tokenizer.js';
import { parserMarkerIds } from '../tokenizer/minimax-m3-tokens.js';
import { promptTokenIds, randomTokenDataset } from './random-token-dataset.js';
import { SeededRng } from './seeded-rng.js';

const tokenizer = loadTokenizer(BUNDLED_MODEL_DIR);

describe('randomTokenDataset (SGLang/vLLM random, exact in tokens)', () => {
  it('gives prompts that encode to exactly their drawn length', () => {
    const opts = { numPrompts: 40, inputLen: 300, outputLen: 16, rangeRatio: 0.1 } as const;
    const reqs = randomTokenDataset({ ...opts, convention: 'sglang' }, new SeededRng(3), tokenizer);
    expect(reqs).toHaveLength(40);
    const lens = new Set<number>();
    for (const r of reqs) {
      expect(tokenizer.encode(r.prompt, { addSpecialTokens: false })).toHaveLength(r.promptLen);
      expect(r.promptLen).toBeGreaterThanOrEqual(30);
      expect(r.promptLen).toBeLessThanOrEqual(300);
      expect(r.outputLen).toBeGreaterThanOrEqual(1);
      expect(r.outputLen).toBeLessThanOrEqual(16);
      lens.add(r.promptLen);
    }
    expect(lens.size).toBeGreaterThan(10);
  });

  it('pins the length with range ratio 1 and never draws special tokens or parser markers', () => {
    const opts = { numPrompts: 20, inputLen: 1024, outputLen: 8, rangeRatio: 1 } as const;
    const reqs = randomTokenDataset({ ...opts, convention: 'sglang' }, new SeededRng(9), tokenizer);
    const banned = new Set([...tokenizer.specialIds, ...parserMarkerIds(tokenizer)]);
    expect(banned.size).toBeGreaterThan(0);
    for (const r of reqs) {
      const ids = tokenizer.encode(r.prompt, { addSpecialTokens: false });
      expect(ids).toHaveLength(1024);
      expect(ids.filter((id) => banned.has(id))).toEqual([]);
      expect(r.outputLen).toBe(8);
    }
    expect(promptTokenIds(tokenizer).some((id) => banned.has(id))).toBe(false);
  });

  it('is deterministic per seed', () => {
    const opts = {
      numPrompts: 5,
      inputLen: 64,
      outputLen: 4,
      rangeRatio: 0,
      convention: 'vllm',
    } as const;
    const a = randomTokenDataset(opts, new SeededRng(1), tokenizer);
    expect(randomTokenDataset(opts, new SeededRng(1), tokenizer)).toEqual(a);
    expect(randomTokenDataset(opts, new SeededRng(2), tokenizer)[0]!.prompt).not.toBe(a[0]!.prompt);
    expect(a.every((r) => r.promptLen === 64)).toBe(true);
  });
});
