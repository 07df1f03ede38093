import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { BpeTokenizer } from './bpe-tokenizer.js';
import { loadTokenizer } from './load-tokenizer.js';

const FIXTURES = join(import.meta.dirname, 'fixtures');

interface GoldenCase {
  text: string;
  ids: number[];
  idsWithSpecial: number[];
  decoded: string;
  decodedSkip: string;
}

const golden = JSON.parse(readFileSync(join(FIXTURES, 'golden.json'), 'utf8')) as Record<
  string,
  GoldenCase[]
>;

function rawJson(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(FIXTURES, name, 'tokenizer.json'), 'utf8')) as Record<
    string,
    unknown
  >;
}

describe.each(['gpt2-style', 'split-style'])('%s tokenizer matches HF tokenizers', (name) => {
  const tok = loadTokenizer(join(FIXTURES, name));
  const cases = golden[name]!;

  it('encodes every golden text to the same ids', () => {
    const mismatches = cases.filter(
      (c) =>
        JSON.stringify(tok.encode(c.text, { addSpecialTokens: false })) !== JSON.stringify(c.ids),
    );
    expect(mismatches.map((c) => c.text)).toEqual([]);
    expect(cases.length).toBeGreaterThan(100);
  });

  it('applies the post-processor only with addSpecialTokens', () => {
    for (const c of cases) expect(tok.encode(c.text)).toEqual(c.idsWithSpecial);
  });

  it('decodes with and without special tokens like HF', () => {
    for (const c of cases) {
      expect(tok.decode(c.ids)).toBe(c.decoded);
      expect(tok.decode(c.ids, { skipSpecialTokens: true })).toBe(c.decodedSkip);
    }
  });
});

describe('BpeTokenizer', () => {
  const tok = loadTokenizer(join(FIXTURES, 'gpt2-style'));

  it('round-trips multi-byte text exactly', () => {
    for (const text of ['naïve café', '你好，世界', '👨‍👩‍👧 and 👍🏽', 'tab\tnew\nline  ', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢']) {
      expect(tok.decode(tok.encode(text, { addSpecialTokens: false }))).toBe(text);
    }
  });

  it('matches added tokens first, longest match, never split', () => {
    const think = tok.tokenToId('<mm:think>')!;
    const close = tok.tokenToId('</mm:think>')!;
    const ids = tok.encode('a<mm:think>b</mm:think>', { addSpecialTokens: false });
    expect(ids).toContain(think);
    expect(ids).toContain(close);
    expect(ids.filter((id) => id === think || id === close)).toHaveLength(2);
    // `]~!b[` contains no shorter added token, `]~b]` is matched whole inside `]~b]]~b]`.
    const turn = tok.tokenToId(']~b]')!;
    expect(tok.encode(']~b]]~b]', { addSpecialTokens: false })).toEqual([turn, turn]);
  });

  it('exposes special ids, token strings and byte-level token bytes', () => {
    const eos = tok.tokenToId('[e~[')!;
    expect(tok.specialIds.has(eos)).toBe(true);
    expect(tok.specialIds.has(tok.tokenToId('<mm:think>')!)).toBe(false);
    expect(tok.idToToken(eos)).toBe('[e~[');
    const spaceThe = tok.tokenToId('Ġthe')!;
    expect(new TextDecoder().decode(tok.tokenBytes(spaceThe))).toBe(' the');
    expect(tok.idToToken(10 ** 6)).toBeUndefined();
    expect(tok.decode([10 ** 6])).toBe('');
    expect(tok.vocabSize).toBeGreaterThan(eos);
  });

  it('accepts merges stored as "a b" strings', () => {
    const json = rawJson('gpt2-style');
    const model = json['model'] as { merges: [string, string][] };
    const asStrings = {
      ...json,
      model: { ...model, merges: model.merges.map((m) => m.join(' ')) },
    };
    const fromStrings = new BpeTokenizer(asStrings);
    for (const c of golden['gpt2-style']!.slice(0, 20)) {
      expect(fromStrings.encode(c.text, { addSpecialTokens: false })).toEqual(c.ids);
    }
  });

  it('applies merges by rank, not left to right', () => {
    // Vocab over a, b, c: "ab" has the worse rank, so "abc" must become [a, bc].
    const vocab = { a: 0, b: 1, c: 2, bc: 3, ab: 4 };
    const json = {
      model: { type: 'BPE', vocab, merges: ['b c', 'a b'] },
      pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, use_regex: false },
      decoder: { type: 'ByteLevel' },
    };
    const t = new BpeTokenizer(json);
    expect(t.encode('abc')).toEqual([0, 3]);
    expect(t.encode('abab')).toEqual([4, 4]);
    const flipped = new BpeTokenizer({ ...json, model: { ...json.model, merges: ['a b', 'b c'] } });
    expect(flipped.encode('abc')).toEqual([4, 2]);
  });

  it('rejects tokenizers that are not byte-level BPE', () => {
    const json = rawJson('gpt2-style');
    expect(() => new BpeTokenizer({ ...json, decoder: { type: 'Metaspace' } })).toThrow(
      /ByteLevel/,
    );
    expect(() => new BpeTokenizer({ ...json, model: { type: 'Unigram', vocab: [] } })).toThrow();
    expect(() => loadTokenizer(join(FIXTURES, 'missing'))).toThrow(/tokenizer\.json/);
  });

  it('encodes long words and long inputs quickly', () => {
    const longWord = 'abcdefghij'.repeat(5000); // one 50k-char pre-token word
    const start = performance.now();
    const ids = tok.encode(longWord, { addSpecialTokens: false });
    expect(tok.decode(ids)).toBe(longWord);
    const text = golden['gpt2-style']!.map((c) => c.text)
      .join(' ')
      .repeat(20);
    const ids2 = tok.encode(text, { addSpecialTokens: false });
    expect(tok.decode(ids2)).toBe(text);
    expect(performance.now() - start).toBeLessThan(2000);
  });
});
