import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import { describe, expect, it } from 'vitest';

import { loadTokenizer } from './load-tokenizer.js';

// encodeAsync must give encode's ids bit for bit: it only pauses between pre-tokenized words.
const FIXTURES = join(import.meta.dirname, 'fixtures');
const MODEL = join(import.meta.dirname, '../../models/moeserve-tiny-m3');
const golden = JSON.parse(readFileSync(join(FIXTURES, 'golden.json'), 'utf8')) as Record<
  string,
  { text: string }[]
>;

/** A text large enough to pause many times: mixed scripts, digits, added tokens, long words. */
function bigText(specials: readonly string[], chars: number): string {
  const parts = [
    'The quick brown fox jumps over the lazy dog. ',
    'Ünïcödé naïve café 数学の問題 😀👩‍👩‍👧 ',
    '12345678901234567890 3.14159 ',
    'x'.repeat(3000),
    ' \n\n\t  trailing   spaces \r\n',
    "it's we'll they'd ",
    ...specials,
  ];
  let out = '';
  for (let i = 0; out.length < chars; i++) out += parts[(i * 7) % parts.length]! + i;
  return out;
}

const cases = [
  { name: 'gpt2-style', dir: join(FIXTURES, 'gpt2-style') },
  { name: 'split-style', dir: join(FIXTURES, 'split-style') },
  { name: 'moeserve-tiny-m3', dir: MODEL },
];

describe.each(cases)('$name: encodeAsync', ({ name, dir }) => {
  const tok = loadTokenizer(dir);
  const specials = [...tok.specialIds].flatMap((id) => tok.idToToken(id) ?? []);
  const texts = [
    '',
    'a',
    ...(golden[name] ?? []).map((c) => c.text),
    bigText(specials, 300_000),
    'y'.repeat(100_000), // one long word
  ];
  const variants = [
    { addSpecialTokens: false },
    { addSpecialTokens: true },
    { addSpecialTokens: false, parseSpecialTokens: false },
  ];

  it('gives the same ids as encode for every text and option', async () => {
    expect(specials.length + texts.length).toBeGreaterThan(3);
    for (const o of variants)
      for (const t of texts) {
        const want = tok.encode(t, o);
        const got = await tok.encodeAsync(t, o);
        expect(got.length).toBe(want.length);
        expect(got).toEqual(want);
      }
  });

  it('reads special tokens in the text as their ids', async () => {
    if (specials.length === 0) return;
    const s = specials[0]!;
    const ids = await tok.encodeAsync(`${bigText([], 50_000)}${s}`, { addSpecialTokens: false });
    expect(ids.at(-1)).toBe(tok.tokenToId(s));
  });
});

describe('encodeAsync on the bundled tokenizer', () => {
  it('gives the event loop turns while it tokenizes a megabyte text', async () => {
    const tok = loadTokenizer(MODEL);
    const text = bigText([], 2_000_000);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const t0 = performance.now();
    const ids = await tok.encodeAsync(text, { addSpecialTokens: false });
    const ms = performance.now() - t0;
    clearInterval(timer);
    expect(ids).toEqual(tok.encode(text, { addSpecialTokens: false }));
    // Not a timing bound (the work itself may take long on a loaded machine): the timer must
    // have fired while the work ran, i.e. the loop was not held for the whole encode.
    expect(ticks).toBeGreaterThan(Math.min(20, ms / 50));
  });
});
