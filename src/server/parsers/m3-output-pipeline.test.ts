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
