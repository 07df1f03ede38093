import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { parseReasoning, ReasoningStreamParser, type ReasoningSplit } from './reasoning-parser.js';

/** Streams `text` cut at the given positions and joins the deltas. */
function streamed(text: string, cuts: number[], prefilledOpener = false): ReasoningSplit {
  const parser = new ReasoningStreamParser({ prefilledOpener });
  const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  const acc = { reasoning: '', content: '' };
  let last = 0;
  for (const p of [...points, text.length]) {
    const d = parser.feed(text.slice(last, p));
    acc.reasoning += d.reasoning;
    acc.content += d.content;
    last = p;
  }
  const end = parser.finish();
  return { reasoning: acc.reasoning + end.reasoning, content: acc.content + end.content };
}

describe('parseReasoning (minimax-m3)', () => {
  const cases: [string, string, boolean, ReasoningSplit][] = [
    [
      'prefilled opener',
      'plan it</mm:think>Answer',
      true,
      { reasoning: 'plan it', content: 'Answer' },
    ],
    [
      'explicit opener',
      '<mm:think>plan</mm:think>\n\nAnswer',
      false,
      { reasoning: 'plan', content: '\n\nAnswer' },
    ],
    [
      'opener after whitespace',
      '\n<mm:think>plan</mm:think>A',
      false,
      { reasoning: 'plan', content: 'A' },
    ],
    [
      'repeated opener when prefilled',
      '<mm:think>plan</mm:think>A',
      true,
      { reasoning: 'plan', content: 'A' },
    ],
    [
      'stray leading closer dropped',
      '</mm:think>Hello',
      false,
      { reasoning: '', content: 'Hello' },
    ],
    [
      'later closers kept',
      '</mm:think>a</mm:think>b',
      false,
      { reasoning: '', content: 'a</mm:think>b' },
    ],
    [
      'closer after reasoning kept',
      '<mm:think>r</mm:think>a</mm:think>',
      false,
      { reasoning: 'r', content: 'a</mm:think>' },
    ],
    ['no closer, prefilled', 'still thinking', true, { reasoning: 'still thinking', content: '' }],
    ['no closer, explicit opener', '<mm:think>still', false, { reasoning: 'still', content: '' }],
    [
      'plain reply',
      'Just text <mm:think> here',
      false,
      { reasoning: '', content: 'Just text <mm:think> here' },
    ],
    ['empty', '', true, { reasoning: '', content: '' }],
    ['partial marker at the end', 'x</mm:th', true, { reasoning: 'x</mm:th', content: '' }],
  ];

  it.each(cases)('%s', (_name, text, prefilledOpener, expected) => {
    expect(parseReasoning(text, { prefilledOpener })).toEqual(expected);
  });

  it.each(cases)(
    'streams %s identically under any split',
    (_name, text, prefilledOpener, expected) => {
      for (let i = 0; i <= text.length; i++) {
        expect(streamed(text, [i], prefilledOpener)).toEqual(expected);
      }
      fc.assert(
        fc.property(fc.array(fc.nat(), { maxLength: 6 }), (cuts) => {
          expect(streamed(text, cuts, prefilledOpener)).toEqual(expected);
        }),
        { numRuns: 50 },
      );
    },
  );

  it('holds back only what could still be a marker', () => {
    const p = new ReasoningStreamParser({ prefilledOpener: true });
    expect(p.feed('abc</mm:')).toEqual({ reasoning: 'abc', content: '' });
    expect(p.feed('think>x')).toEqual({ reasoning: '', content: 'x' });
    const q = new ReasoningStreamParser();
    expect(q.feed('  </mm')).toEqual({ reasoning: '', content: '' });
    expect(q.feed(':think>Hi')).toEqual({ reasoning: '', content: 'Hi' });
    expect(q.feed(' </mm:think>')).toEqual({ reasoning: '', content: ' </mm:think>' });
  });

  it('agrees with streaming on random marker soups', () => {
    const piece = fc.constantFrom(
      '<mm:think>',
      '</mm:think>',
      'a',
      ' ',
      '\n',
      '<mm',
      'think>',
      'é',
    );
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 12 }),
        fc.boolean(),
        fc.array(fc.nat()),
        (ps, pre, cuts) => {
          const text = ps.join('');
          expect(streamed(text, cuts, pre)).toEqual(parseReasoning(text, { prefilledOpener: pre }));
        },
      ),
      { numRuns: 300 },
    );
  });
});
