import { join } from 'node:path';

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { IncrementalDecoder } from './incremental-decoder.js';
import { loadTokenizer } from './load-tokenizer.js';

const tok = loadTokenizer(join(import.meta.dirname, 'fixtures', 'gpt2-style'));

/** Feeds ids in the given chunk sizes and returns every delta, flush last. */
function stream(ids: number[], sizes: number[], dec = new IncrementalDecoder(tok)): string[] {
  const deltas: string[] = [];
  let pos = 0;
  for (let k = 0; pos < ids.length; k++) {
    const n = Math.max(1, sizes[k % Math.max(1, sizes.length)] ?? 1);
    deltas.push(dec.feed(ids.slice(pos, pos + n)));
    pos += n;
  }
  deltas.push(dec.flush());
  return deltas;
}

describe('IncrementalDecoder', () => {
  it('holds back the bytes of a character split over tokens', () => {
    const ids = tok.encode('🚀', { addSpecialTokens: false });
    expect(ids.length).toBeGreaterThan(1); // the emoji is not one token in this vocabulary
    const deltas = stream(ids, [1]);
    expect(deltas.slice(0, -2).every((d) => d === '')).toBe(true);
    expect(deltas.join('')).toBe('🚀');
  });

  it('never emits a broken character and concatenates to the full decode', () => {
    // Text that itself holds U+FFFD would legitimately stream it; fast-check can draw it.
    const text = fc
      .string({ unit: 'grapheme', maxLength: 40 })
      .filter((t) => !t.includes('\uFFFD'));
    fc.assert(
      fc.property(text, fc.array(fc.integer({ min: 1, max: 4 }), { maxLength: 8 }), (t, sizes) => {
        const ids = tok.encode(t, { addSpecialTokens: false });
        const deltas = stream(ids, sizes);
        expect(deltas.join('')).toBe(t);
        for (const d of deltas) expect(d).not.toContain('\uFFFD');
      }),
      { numRuns: 300 },
    );
  });

  it('skips special tokens unless asked to keep them', () => {
    const ids = tok.encode(']~b]ai\n<mm:think>hi[e~[', { addSpecialTokens: false });
    const eos = tok.tokenToId('[e~[')!;
    const skip = new IncrementalDecoder(tok, { skipSpecialTokens: true });
    expect(stream(ids, [2], skip).join('')).toBe('ai\n<mm:think>hi');
    const keep = new IncrementalDecoder(tok, { skipSpecialTokens: true, keepIds: new Set([eos]) });
    expect(stream(ids, [3], keep).join('')).toBe('ai\n<mm:think>hi[e~[');
    expect(stream(ids, [1]).join('')).toBe(tok.decode(ids));
  });

  it('flushes a character cut off by the end of generation as U+FFFD', () => {
    const ids = tok.encode('é', { addSpecialTokens: false });
    const partial = tok.encode('🚀', { addSpecialTokens: false }).slice(0, 1);
    const dec = new IncrementalDecoder(tok);
    expect(dec.feed(ids)).toBe('é');
    expect(dec.feed(partial)).toBe('');
    expect(dec.flush()).toBe('\uFFFD');
  });
});

describe('parserMarkerIds', () => {
  it('finds the M3 markers the vocabulary has', async () => {
    const { parserMarkerIds } = await import('./minimax-m3-tokens.js');
    const ids = parserMarkerIds(tok);
    expect(ids).toEqual(
      new Set(
        ['<mm:think>', '</mm:think>', ']<]minimax[>[', '<tool_call>', '</tool_call>'].map((m) =>
          tok.tokenToId(m)!,
        ),
      ),
    );
  });
});
