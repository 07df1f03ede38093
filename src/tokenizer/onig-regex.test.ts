import { describe, expect, it } from 'vitest';

import { onigToJsRegex } from './onig-regex.js';
import { buildPreTokenizer } from './pre-tokenizer.js';

const words = (re: RegExp, text: string): string[] => [...text.matchAll(re)].map((m) => m[0]);

describe('onigToJsRegex', () => {
  it('expands scoped case-insensitive groups without touching \\p escapes', () => {
    const re = onigToJsRegex("(?i:'s|'ll)|\\p{L}+");
    expect(re.source).toBe("(?:'[sS]|'[lL][lL])|\\p{L}+");
    expect(words(re, "WE'LL it's")).toEqual(['WE', "'LL", 'it', "'s"]);
  });

  it('drops possessive quantifiers but keeps plain ones and counted repeats', () => {
    expect(onigToJsRegex('a++b?+c*+\\p{N}{1,3}+[+]+').source).toBe('a+b?c*\\p{N}{1,3}[+]+');
  });

  it('folds letters inside character classes of a (?i:) group', () => {
    expect(words(onigToJsRegex('(?i:[a-c]x)'), 'AX bx')).toEqual(['AX', 'bx']);
  });
});

describe('buildPreTokenizer', () => {
  const split = (behavior: string, invert = false) =>
    buildPreTokenizer({
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { String: '-' }, behavior, invert },
        { type: 'ByteLevel', add_prefix_space: false, use_regex: false },
      ],
    });

  it('implements every Split behavior', () => {
    expect([...split('Isolated')('a-b--c')]).toEqual(['a', '-', 'b', '-', '-', 'c']);
    expect([...split('Removed')('a-b--c')]).toEqual(['a', 'b', 'c']);
    expect([...split('MergedWithPrevious')('a-b--c')]).toEqual(['a-', 'b--', 'c']);
    expect([...split('MergedWithNext')('a-b--c')]).toEqual(['a', '-b', '--c']);
    expect([...split('Contiguous')('a-b--c')]).toEqual(['a', '-', 'b', '--', 'c']);
    expect([...split('Removed', true)('a-b--c')]).toEqual(['-', '-', '-']);
  });

  it('splits with the GPT-2 pattern and honours add_prefix_space', () => {
    const pt = buildPreTokenizer({ type: 'ByteLevel', add_prefix_space: true, use_regex: true });
    expect([...pt("hi there, it's 42")]).toEqual([' hi', ' there', ',', ' it', "'s", ' 42']);
    expect([...pt(' é')]).toEqual([' é']);
  });

  it('refuses pipelines that are not byte-level', () => {
    expect(() => buildPreTokenizer({ type: 'Whitespace' })).toThrow(/Whitespace/);
    expect(() => buildPreTokenizer({ type: 'Digits', individual_digits: true })).toThrow(
      /ByteLevel/,
    );
  });
});
