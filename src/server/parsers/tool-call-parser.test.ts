import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import {
  collectToolCalls,
  parseToolCalls,
  ToolCallStreamParser,
  type ToolCallDelta,
  type ToolSpec,
} from './tool-call-parser.js';

const NS = ']<]minimax[>[';
const ids = { makeId: (i: number) => `call_${i}` };
const block = (...invokes: string[]) =>
  `${NS}<tool_call>\n${invokes.join('\n')}\n${NS}</tool_call>`;
const invoke = (name: string, body: string) => `${NS}<invoke name="${name}">${body}${NS}</invoke>`;
const el = (tag: string, inner: string) => `${NS}<${tag}>${inner}${NS}</${tag}>`;

const planTool: ToolSpec = {
  type: 'function',
  function: {
    name: 'make_plan',
    parameters: {
      type: 'object',
      properties: {
        title: { type: 'string' },
        minutes: { type: 'integer' },
        score: { type: 'number' },
        whole: { type: 'number' },
        buffer: { type: 'boolean' },
        off: { type: 'boolean' },
        note: { type: ['string', 'null'] },
        strict: { type: 'string' },
        days: { type: 'array', items: { type: 'string' } },
        prefs: {
          type: 'object',
          properties: { retries: { type: 'integer' }, algo: { type: 'string' } },
        },
        subjects: {
          type: 'array',
          items: {
            type: 'object',
            properties: { name: { type: 'string' }, hours: { type: 'integer' } },
          },
        },
        pair: { type: 'array', prefixItems: [{ type: 'integer' }, { type: 'boolean' }] },
        extra: { type: 'object', additionalProperties: { type: 'integer' } },
      },
    },
  },
};

const planXml = [
  el('title', ' Study  plan '),
  el('minutes', '45'),
  el('score', '8.5'),
  el('whole', '3.0'),
  el('buffer', 'Yes'),
  el('off', 'off'),
  el('note', 'null'),
  el('strict', 'null'),
  el('days', el('item', 'Mon') + el('item', '7')),
  el('prefs', el('retries', '3') + el('algo', 'SM2')),
  el(
    'subjects',
    el('item', el('name', 'Calc') + el('hours', '30')) + el('item', el('name', 'History')),
  ),
  el('pair', el('item', '1') + el('item', 'true')),
  el('extra', el('a', '1') + el('b', '2')),
].join('');

const planArgs = {
  title: ' Study  plan ',
  minutes: 45,
  score: 8.5,
  whole: 3,
  buffer: true,
  off: false,
  note: null,
  strict: 'null',
  days: ['Mon', '7'],
  prefs: { retries: 3, algo: 'SM2' },
  subjects: [{ name: 'Calc', hours: 30 }, { name: 'History' }],
  pair: [1, true],
  extra: { a: 1, b: 2 },
};

describe('parseToolCalls (minimax-m3)', () => {
  it('types arguments by the tool schema, nested objects and arrays included', () => {
    const r = parseToolCalls(`Here you go.${block(invoke('make_plan', planXml))}`, [planTool], ids);
    expect(r.content).toBe('Here you go.');
    expect(r.toolCalls).toHaveLength(1);
    expect(r.toolCalls[0]).toMatchObject({
      id: 'call_0',
      type: 'function',
      function: { name: 'make_plan' },
    });
    expect(JSON.parse(r.toolCalls[0]!.function.arguments)).toEqual(planArgs);
  });

  it('keeps untyped values as strings and infers containers from the elements', () => {
    const body =
      el('n', '5') + el('list', el('item', 'a') + el('item', 'b')) + el('obj', el('k', 'v'));
    const r = parseToolCalls(block(invoke('unknown_fn', body)), [planTool], ids);
    expect(JSON.parse(r.toolCalls[0]!.function.arguments)).toEqual({
      n: '5',
      list: ['a', 'b'],
      obj: { k: 'v' },
    });
  });

  it('turns a repeated key into a list', () => {
    const body =
      el('tag', 'x') + el('tag', 'y') + el('tag', 'z') + el('o', el('k', '1') + el('k', '2'));
    const r = parseToolCalls(block(invoke('f', body)));
    expect(JSON.parse(r.toolCalls[0]!.function.arguments)).toEqual({
      tag: ['x', 'y', 'z'],
      o: { k: ['1', '2'] },
    });
  });

  it('returns several invokes and blocks as indexed calls, text outside as content', () => {
    const text = `A${block(invoke('f', el('a', '1')), invoke('g', ''))}B${block(invoke('h', ''))}C`;
    const r = parseToolCalls(text, [], ids);
    expect(r.content).toBe('ABC');
    expect(r.toolCalls.map((c) => [c.id, c.function.name, c.function.arguments])).toEqual([
      ['call_0', 'f', '{"a":"1"}'],
      ['call_1', 'g', '{}'],
      ['call_2', 'h', '{}'],
    ]);
  });

  it('normalises whitespace between the marker and the tag', () => {
    const text = `${NS} <tool_call>\n${NS}\n<invoke name="f">${NS}\t<a>1${NS} </a>${NS}</invoke>${NS}\r\n</tool_call>`;
    expect(parseToolCalls(text).toolCalls[0]!.function).toEqual({
      name: 'f',
      arguments: '{"a":"1"}',
    });
  });

  it.each([
    ['mismatched closing tag', block(invoke('f', `${NS}<a>1${NS}</b>`))],
    ['text between invokes', block(`junk${invoke('f', '')}`)],
    ['invoke without name', block(`${NS}<invoke>${NS}</invoke>`)],
    ['element inside a typed scalar', block(invoke('make_plan', el('minutes', el('x', '1'))))],
    ['never closed', `${NS}<tool_call>\n${invoke('f', el('a', '1'))}`],
  ])('returns a malformed block as content: %s', (_name, bad) => {
    const text = `before ${bad} after${block(invoke('ok', ''))}`;
    const r = parseToolCalls(text, [planTool], ids);
    if (_name === 'never closed') {
      expect(r).toEqual({ content: text, toolCalls: [] });
    } else {
      expect(r.content).toBe(`before ${bad} after`);
      expect(r.toolCalls.map((c) => [c.id, c.function.name])).toEqual([['call_0', 'ok']]);
    }
  });

  it('leaves text with stray markers alone', () => {
    const text = `a ${NS} b ${NS}<b>x</b> ]<]mini`;
    expect(parseToolCalls(text)).toEqual({ content: text, toolCalls: [] });
  });
});

/** Feeds `text` cut at `cuts` through a streaming parser; returns content and folded calls. */
function streamAll(text: string, cuts: number[], tools: ToolSpec[] = []) {
  const parser = new ToolCallStreamParser(tools, ids);
  const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
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
  return { content: content + end.content, deltas: [...deltas, ...end.calls] };
}

describe('ToolCallStreamParser', () => {
  const text = `Sure.${block(invoke('make_plan', planXml), invoke('f', el('q', 'x')))} Done.`;

  it('matches the non-streaming result for every single cut', () => {
    const whole = parseToolCalls(text, [planTool], ids);
    for (let i = 0; i <= text.length; i++) {
      const s = streamAll(text, [i], [planTool]);
      expect(s.content).toBe(whole.content);
      expect(collectToolCalls(s.deltas)).toEqual(whole.toolCalls);
    }
  });

  it('emits the name first, then argument fragments, streaming strings as they arrive', () => {
    const p = new ToolCallStreamParser([planTool], ids);
    expect(p.feed(`Hi ${NS}<tool_`)).toEqual({ content: 'Hi ', calls: [] });
    expect(p.feed(`call>\n${NS}<invoke name="make_plan">`).calls).toEqual([
      { index: 0, id: 'call_0', type: 'function', name: 'make_plan', arguments: '' },
      { index: 0, arguments: '{' },
    ]);
    expect(p.feed(`${NS}<title>Lin"e 1\n`).calls).toEqual([
      { index: 0, arguments: '"title":"Lin\\"e 1\\n' },
    ]);
    expect(p.feed('more').calls).toEqual([{ index: 0, arguments: 'more' }]);
    expect(p.feed(`${NS}</title>${NS}<minutes>4`).calls).toEqual([{ index: 0, arguments: '"' }]);
    expect(p.feed(`5${NS}</minutes>`).calls).toEqual([]); // held until no repeat can follow
    expect(p.feed(`${NS}</invoke>\n${NS}</tool_call>`).calls).toEqual([
      { index: 0, arguments: ',"minutes":45}' },
    ]);
    expect(p.finish()).toEqual({ content: '', calls: [] });
  });

  it('closes an emitted call as valid JSON when the block breaks mid-way', () => {
    const bad = `${NS}<tool_call>\n${invoke('f', el('a', '1'))}\n${NS}<invoke name="g">${NS}<title>ab${NS}</oops>tail`;
    const s = streamAll(bad, [bad.indexOf('ab') + 1], [planTool]);
    const calls = collectToolCalls(s.deltas);
    expect(calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['f', { a: '1' }],
      ['g', {}],
    ]);
    expect(s.content).toBe(`${NS}</oops>tail`);
  });

  it('returns a block as content when it breaks before any call went out', () => {
    const bad = `x${NS}<tool_call>\nnot a call${NS}</tool_call>y`;
    expect(streamAll(bad, [5, 20])).toEqual({ content: bad, deltas: [] });
  });

  it('closes a call cut off by the end of the output', () => {
    const cut = `${NS}<tool_call>\n${NS}<invoke name="make_plan">${NS}<title>Par`;
    const calls = collectToolCalls(streamAll(cut, [], [planTool]).deltas);
    expect(JSON.parse(calls[0]!.function.arguments)).toEqual({ title: 'Par' });
  });

  it('never splits a surrogate pair inside a streamed string argument', () => {
    const emoji = `${NS}<tool_call>\n${invoke('make_plan', el('title', 'a😀b'))}\n${NS}</tool_call>`;
    const cut = emoji.indexOf('😀') + 1; // between the two UTF-16 halves
    const s = streamAll(emoji, [cut], [planTool]);
    expect(collectToolCalls(s.deltas)[0]!.function.arguments).toBe('{"title":"a😀b"}');
  });

  it('agrees with parseToolCalls under random cuts', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 10 }), (cuts) => {
        const s = streamAll(text, cuts, [planTool]);
        const whole = parseToolCalls(text, [planTool], ids);
        expect(s.content).toBe(whole.content);
        expect(collectToolCalls(s.deltas)).toEqual(whole.toolCalls);
      }),
      { numRuns: 200 },
    );
  });
});
