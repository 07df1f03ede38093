import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { IncrementalDecoder } from '../../tokenizer/incremental-decoder.js';
import { loadTokenizer } from '../../tokenizer/load-tokenizer.js';
import { parserMarkerIds } from '../../tokenizer/minimax-m3-tokens.js';

import { parseReasoning, ReasoningStreamParser } from './reasoning-parser.js';
import {
  collectToolCalls,
  parseToolCalls,
  ToolCallStreamParser,
  type ToolCallDelta,
} from './tool-call-parser.js';
import type { ToolSpec } from './tool-call-stream-parser.js';

const tok = loadTokenizer(join(import.meta.dirname, '../../tokenizer/fixtures/gpt2-style'));
const tools: ToolSpec[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, days: { type: 'integer' } },
      },
    },
  },
];
const NS = ']<]minimax[>[';
const output =
  'The user wants Paris weather 🌤️ for 3 days.</mm:think>Let me check.' +
  `${NS}<tool_call>\n${NS}<invoke name="get_weather">${NS}<city>Paris, 巴黎${NS}</city>` +
  `${NS}<days>3${NS}</days>${NS}</invoke>\n${NS}</tool_call>[e~[`;

describe('M3 output pipeline: ids -> decoder -> reasoning -> tool calls', () => {
  it('streams token by token to the same result as parsing the whole text', () => {
    const ids = tok.encode(output, { addSpecialTokens: false });
    const decoder = new IncrementalDecoder(tok, {
      skipSpecialTokens: true,
      keepIds: parserMarkerIds(tok),
    });
    const reasoning = new ReasoningStreamParser({ prefilledOpener: true });
    const calls = new ToolCallStreamParser(tools, { makeId: (i) => `c${i}` });
    let reasoningText = '';
    let content = '';
    const deltas: ToolCallDelta[] = [];
    const route = (text: string, last: boolean) => {
      const r = reasoning.feed(text);
      const rEnd = last ? reasoning.finish() : { reasoning: '', content: '' };
      reasoningText += r.reasoning + rEnd.reasoning;
      const t = calls.feed(r.content + rEnd.content);
      const tEnd = last ? calls.finish() : { content: '', calls: [] };
      content += t.content + tEnd.content;
      deltas.push(...t.calls, ...tEnd.calls);
    };
    for (const id of ids) route(decoder.feed([id]), false);
    route(decoder.flush(), true);

    const text = tok.decode(ids, { skipSpecialTokens: true });
    const split = parseReasoning(text, { prefilledOpener: true });
    const parsed = parseToolCalls(split.content, tools, { makeId: (i) => `c${i}` });
    expect(reasoningText).toBe('The user wants Paris weather 🌤️ for 3 days.');
    expect(reasoningText).toBe(split.reasoning);
    expect(content).toBe('Let me check.');
    expect(content).toBe(parsed.content);
    expect(collectToolCalls(deltas)).toEqual(parsed.toolCalls);
    expect(parsed.toolCalls[0]!.function).toEqual({
      name: 'get_weather',
      arguments: '{"city":"Paris, 巴黎","days":3}',
    });
  });
});

describe('M3 output pipeline: text -> reasoning -> tool calls, cut anywhere', () => {
  /** Streams `text` cut at `cuts` through both parsers; returns what a client would assemble. */
  function stream(text: string, cuts: number[], prefilledOpener: boolean) {
    const reasoning = new ReasoningStreamParser({ prefilledOpener });
    const calls = new ToolCallStreamParser(tools, { makeId: (i) => `c${i}` });
    const acc = { reasoning: '', content: '', deltas: [] as ToolCallDelta[] };
    const route = (piece: string, last: boolean) => {
      const r = reasoning.feed(piece);
      const rEnd = last ? reasoning.finish() : { reasoning: '', content: '' };
      acc.reasoning += r.reasoning + rEnd.reasoning;
      const t = calls.feed(r.content + rEnd.content);
      const tEnd = last ? calls.finish() : { content: '', calls: [] };
      acc.content += t.content + tEnd.content;
      acc.deltas.push(...t.calls, ...tEnd.calls);
    };
    let at = 0;
    for (const c of cuts) {
      route(text.slice(at, c), false);
      at = c;
    }
    route(text.slice(at), true);
    return { reasoning: acc.reasoning, content: acc.content, calls: collectToolCalls(acc.deltas) };
  }

  function whole(text: string, prefilledOpener: boolean) {
    const split = parseReasoning(text, { prefilledOpener });
    const parsed = parseToolCalls(split.content, tools, { makeId: (i) => `c${i}` });
    return { reasoning: split.reasoning, content: parsed.content, calls: parsed.toolCalls };
  }

  const call = (city: string) =>
    `${NS}<invoke name="get_weather">${NS}<city>${city}${NS}</city>${NS}<days>2${NS}</days>${NS}</invoke>\n`;
  const cases: [string, string, boolean][] = [
    [
      'explicit opener, two calls',
      `<mm:think>plan</mm:think>Ok.${NS}<tool_call>\n${call('Oslo')}${call('Rome')}${NS}</tool_call>`,
      false,
    ],
    [
      'stray leading closer, then a call',
      `</mm:think>${NS}<tool_call>\n${call('Lima')}${NS}</tool_call> done`,
      false,
    ],
    [
      'prefilled, malformed block stays content',
      `think</mm:think>${NS}<tool_call>\n${NS}<invoke name="get_weather">${NS}<city>x${NS}</days>${NS}</tool_call>`,
      true,
    ],
    [
      'markup inside reasoning is reasoning',
      `<mm:think>${NS}<tool_call>\n${call('Pisa')}${NS}</tool_call></mm:think>fine`,
      false,
    ],
    [
      'cut off inside a call',
      `<mm:think>r</mm:think>${NS}<tool_call>\n${NS}<invoke name="get_weather">${NS}<city>Ber`,
      false,
    ],
  ];

  it.each(cases)('%s: every single cut equals the whole parse', (_name, text, prefilled) => {
    const expected = whole(text, prefilled);
    for (let i = 0; i <= text.length; i++) expect(stream(text, [i], prefilled)).toEqual(expected);
    // and one character at a time
    const all = Array.from({ length: text.length }, (_, i) => i);
    expect(stream(text, all, prefilled)).toEqual(expected);
  });

  it('gives the expected split on those cases', () => {
    const r = cases.map(([, text, prefilled]) => whole(text, prefilled));
    expect(r[0]!.calls.map((c) => c.function.arguments)).toEqual([
      '{"city":"Oslo","days":2}',
      '{"city":"Rome","days":2}',
    ]);
    expect([r[0]!.reasoning, r[0]!.content]).toEqual(['plan', 'Ok.']);
    expect([r[1]!.reasoning, r[1]!.content, r[1]!.calls.length]).toEqual(['', ' done', 1]);
    expect(r[2]!.calls).toEqual([]);
    expect(r[2]!.content).toContain(`${NS}</days>`);
    expect(r[3]!.calls).toEqual([]);
    expect(r[3]!.reasoning).toContain('<tool_call>');
    expect(r[3]!.content).toBe('fine');
    expect(r[4]!.calls).toEqual([]);
    expect(r[4]!.content).toBe(`${NS}<tool_call>\n${NS}<invoke name="get_weather">${NS}<city>Ber`);
  });
});
