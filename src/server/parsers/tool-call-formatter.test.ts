import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { builtinM3Template, renderChat } from '../../tokenizer/chat-template.js';

import { formatToolCalls, toM3Xml } from './tool-call-formatter.js';
import {
  collectToolCalls,
  parseToolCalls,
  ToolCallStreamParser,
  type ToolCallDelta,
  type ToolSpec,
} from './tool-call-parser.js';
import type { JsonSchema } from './tool-schema.js';

const NS = ']<]minimax[>[';

/** The schema a value satisfies, so that parsing can type it back. */
function schemaOf(v: unknown): JsonSchema {
  if (typeof v === 'string') return { type: 'string' };
  if (typeof v === 'boolean') return { type: 'boolean' };
  // From 1e21 on, String(n) has an exponent, which int() does not read: such a value is a number.
  if (typeof v === 'number')
    return { type: Number.isInteger(v) && Math.abs(v) < 1e21 ? 'integer' : 'number' };
  if (Array.isArray(v)) return { type: 'array', prefixItems: v.map(schemaOf) };
  const props = Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, schemaOf(x)]));
  return { type: 'object', properties: props };
}

const key = fc.stringMatching(/^[a-z][a-z0-9_]{0,7}$/).filter((k) => k !== 'item');
const text = fc.string({ unit: 'grapheme', maxLength: 12 }).filter((s) => !s.includes(']<]'));
const leaf = fc.oneof(
  text,
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Object.is(d, -0)),
);
const { value } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, leaf, tie('array'), tie('object')),
  array: fc.array(tie('value'), { minLength: 1, maxLength: 3 }),
  object: fc.dictionary(key, tie('value'), { minKeys: 1, maxKeys: 3 }),
}));
const args = fc.dictionary(key, value, { maxKeys: 4 });

describe('formatToolCalls', () => {
  it('writes the M3 block layout', () => {
    const out = formatToolCalls([
      { name: 'f', arguments: '{"a":1,"b":[true,null],"c":{"d":"x"},"e":null}' },
      { function: { name: 'g', arguments: {} } },
    ]);
    expect(out).toBe(
      `${NS}<tool_call>\n${NS}<invoke name="f">${NS}<a>1${NS}</a>${NS}<b>${NS}<item>true${NS}</item>` +
        `${NS}<item>${NS}</item>${NS}</b>${NS}<c>${NS}<d>x${NS}</d>${NS}</c>${NS}</invoke>\n` +
        `${NS}<invoke name="g">${NS}</invoke>\n${NS}</tool_call>`,
    );
    expect(toM3Xml(null)).toBe('');
  });

  it('round-trips through parseToolCalls given the schema', () => {
    fc.assert(
      fc.property(args, (a) => {
        const tool: ToolSpec = {
          type: 'function',
          function: { name: 'f', parameters: schemaOf(a) },
        };
        const parsed = parseToolCalls(formatToolCalls([{ name: 'f', arguments: a }]), [tool]);
        expect(parsed.content).toBe('');
        expect(JSON.parse(parsed.toolCalls[0]!.function.arguments)).toEqual(a);
      }),
      { numRuns: 300 },
    );
  });

  it('writes exactly what the built-in chat template renders for a past call', () => {
    fc.assert(
      fc.property(args, (a) => {
        const call = {
          id: 'c',
          type: 'function',
          function: { name: 'f', arguments: JSON.stringify(a) },
        };
        const { prompt } = renderChat(
          builtinM3Template,
          [{ role: 'assistant', content: '', tool_calls: [call] }],
          {
            addGenerationPrompt: false,
          },
        );
        expect(prompt).toContain(`</mm:think>${formatToolCalls([call])}[e~[`);
      }),
      { numRuns: 200 },
    );
  });

  it('streams any well-formed output identically to the non-streaming parse', () => {
    const prose = fc.constantFrom(
      '',
      'ok. ',
      '\n',
      ' ]<]mini ',
      'a ]<]minimax[>[ b',
      '<tool_call>',
    );
    const turn = fc.tuple(prose, fc.array(args, { minLength: 1, maxLength: 2 }), prose);
    fc.assert(
      fc.property(
        fc.array(turn, { maxLength: 2 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (turns, cuts) => {
          const tools: ToolSpec[] = [];
          const text = turns
            .map(([before, calls, after], t) => {
              const named = calls.map((a, i) => ({ name: `f${t}_${i}`, arguments: a }));
              for (const c of named)
                tools.push({ function: { name: c.name, parameters: schemaOf(c.arguments) } });
              return before + formatToolCalls(named) + after;
            })
            .join('');
          const makeId = (i: number) => `id${i}`;
          const whole = parseToolCalls(text, tools, { makeId });
          const parser = new ToolCallStreamParser(tools, { makeId });
          const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((x, y) => x - y);
          let content = '';
          const deltas: ToolCallDelta[] = [];
          let last = 0;
          for (const p of [...points, text.length]) {
            const out = parser.feed(text.slice(last, p));
            content += out.content;
            deltas.push(...out.calls);
            last = p;
          }
          const end = parser.finish();
          expect(content + end.content).toBe(whole.content);
          expect(collectToolCalls([...deltas, ...end.calls])).toEqual(whole.toolCalls);
          expect(whole.toolCalls).toHaveLength(turns.reduce((n, [, calls]) => n + calls.length, 0));
        },
      ),
      { numRuns: 300 },
    );
  });
});
