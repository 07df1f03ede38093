import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type * as XGrammar from '@mlc-ai/web-xgrammar';
import { loadXGrammar } from '../../engine/grammar/xgrammar.js';
import { toolCallGrammar } from './tool-call-grammar.js';
import { formatToolCalls } from './tool-call-formatter.js';
import { parseToolCalls } from './tool-call-parser.js';
import type { ToolSpec } from './tool-call-stream-parser.js';

const NS = ']<]minimax[>[';

const tools: ToolSpec[] = [
  {
    type: 'function',
    function: {
      name: 'plan_trip',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string' },
          days: { type: 'integer' },
          budget: { type: 'number' },
          refundable: { type: 'boolean' },
          mode: { type: 'string', enum: ['train', 'plane'] },
          note: { type: ['string', 'null'] },
          stops: { type: 'array', items: { type: 'string' }, maxItems: 3 },
          hotel: {
            type: 'object',
            properties: { name: { type: 'string' }, stars: { type: 'integer' } },
            required: ['name'],
          },
        },
        required: ['city', 'days'],
      },
    },
  },
  { type: 'function', function: { name: 'ping', parameters: { type: 'object', properties: {} } } },
];

const text = fc.stringMatching(/^[a-zA-Z0-9 ,.!?é]{1,12}$/);
const tripArgs = fc.record(
  {
    city: text,
    days: fc.integer({ min: -5, max: 10_000 }),
    budget: fc
      .double({ min: -1e6, max: 1e6, noNaN: true })
      .map((x) => Math.round(x * 100) / 100 + 0),
    refundable: fc.boolean(),
    mode: fc.constantFrom('train', 'plane'),
    stops: fc.array(text, { maxLength: 3 }),
    hotel: fc.record(
      { name: text, stars: fc.integer({ min: 1, max: 5 }) },
      { requiredKeys: ['name'] },
    ),
  },
  { requiredKeys: ['city', 'days'] },
);

/** Keys in schema order, as the grammar (and the model's training format) writes them. */
function ordered(args: Record<string, unknown>): Record<string, unknown> {
  const order = Object.keys((tools[0]!.function.parameters as { properties: object }).properties);
  return Object.fromEntries(order.filter((k) => k in args).map((k) => [k, args[k]]));
}

describe('toolCallGrammar', () => {
  let xg: ReturnType<typeof loadXGrammar>;
  const grammars = new Map<string, XGrammar.Grammar>();
  const accepts = async (ebnf: string, s: string) => {
    let g = grammars.get(ebnf);
    if (!g) grammars.set(ebnf, (g = await xg.Grammar.fromEBNF(ebnf)));
    return xg.Testings.isGrammarAcceptString(g, s);
  };
  beforeAll(() => {
    xg = loadXGrammar();
  });

  it('accepts what formatToolCalls writes, and it parses back to the same arguments', async () => {
    const required = toolCallGrammar(tools);
    const named = toolCallGrammar(tools, 'plan_trip');
    await fc.assert(
      fc.asyncProperty(fc.array(tripArgs, { minLength: 1, maxLength: 2 }), async (calls) => {
        const args = calls.map(ordered);
        const block = formatToolCalls(args.map((a) => ({ name: 'plan_trip', arguments: a })));
        expect(await accepts(required, block)).toBe(true);
        expect(await accepts(named, block)).toBe(args.length === 1);
        const parsed = parseToolCalls(block, tools).toolCalls;
        expect(parsed.map((c) => JSON.parse(c.function.arguments) as unknown)).toEqual(args);
      }),
      { numRuns: 60 },
    );
  });

  it('rejects calls that break the schema or the format', async () => {
    const g = toolCallGrammar(tools);
    const call = (inner: string, name = 'plan_trip') =>
      `${NS}<tool_call>\n${NS}<invoke name="${name}">${inner}${NS}</invoke>\n${NS}</tool_call>`;
    const city = `${NS}<city>Rome${NS}</city>`;
    const days = `${NS}<days>3${NS}</days>`;
    expect(await accepts(g, call(city + days))).toBe(true);
    expect(await accepts(g, call('', 'ping'))).toBe(true);
    expect(await accepts(g, call(city))).toBe(false); // required days missing
    expect(await accepts(g, call(days + city))).toBe(false); // schema order
    expect(await accepts(g, call(`${city}${NS}<days>three${NS}</days>`))).toBe(false);
    expect(await accepts(g, call(`${city + days}${NS}<mode>car${NS}</mode>`))).toBe(false);
    expect(await accepts(g, call(`${city + days}${NS}<extra>1${NS}</extra>`))).toBe(false);
    expect(await accepts(g, call(`${NS}<city>a]<b${NS}</city>${days}`))).toBe(false);
    expect(await accepts(g, call(`${NS}<city>a]b${NS}</city>${days}`))).toBe(true);
    const four = ['a', 'b', 'c', 'd'].map((s) => `${NS}<item>${s}${NS}</item>`).join('');
    expect(await accepts(g, call(`${city + days}${NS}<stops>${four}${NS}</stops>`))).toBe(false);
    expect(await accepts(g, call(city + days, 'unknown_tool'))).toBe(false);
    expect(await accepts(toolCallGrammar(tools, 'ping'), call(city + days))).toBe(false);
  });

  it('refuses a name that is not among the tools', () => {
    expect(() => toolCallGrammar(tools, 'nope')).toThrow(/no tool to call named "nope"/);
  });
});
