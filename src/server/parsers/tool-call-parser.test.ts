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

/** Tools named f, g, h, ok with no parameter schema: every value stays a string. */
const bare = (...names: string[]): ToolSpec[] =>
  names.map((name) => ({ type: 'function', function: { name } }));
const fgh = bare('f', 'g', 'h', 'ok');

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
      el('n', '5') +
      el('list', el('item', 'a') + el('item', 'b')) +
      el('obj', el('k', 'v')) +
      el('undeclared', '7');
    const r = parseToolCalls(block(invoke('f', body), invoke('make_plan', el('zz', '1'))), [
      ...fgh,
      planTool,
    ]);
    expect(r.toolCalls.map((c) => JSON.parse(c.function.arguments))).toEqual([
      { n: '5', list: ['a', 'b'], obj: { k: 'v' }, undeclared: '7' },
      { zz: '1' },
    ]);
  });

  it('turns a repeated key into a list for every schema type, adjacent or not', () => {
    const tool: ToolSpec = {
      type: 'function',
      function: {
        name: 'f',
        parameters: {
          type: 'object',
          properties: {
            tag: { type: 'string' },
            n: { type: 'integer' },
            b: { type: 'boolean' },
            o: { type: 'object', properties: { k: { type: 'integer' } } },
          },
        },
      },
    };
    const body =
      el('tag', 'x') +
      el('n', '1') +
      el('tag', 'y') +
      el('b', 'true') +
      el('n', '2') +
      el('tag', 'z') +
      el('b', 'no') +
      el('o', el('k', '1') + el('k', '2')) +
      el('o', el('k', '3'));
    const r = parseToolCalls(block(invoke('f', body)), [tool]);
    // Key order is that of the first occurrence; every repeat joins it.
    expect(r.toolCalls[0]!.function.arguments).toBe(
      '{"tag":["x","y","z"],"n":[1,2],"b":[true,false],"o":[{"k":[1,2]},{"k":3}]}',
    );
  });

  it('keeps the order in which the model wrote the keys, numeric-looking ones included', () => {
    const body = el('b', '1') + el('2', 'two') + el('a', el('9', 'x') + el('1', 'y'));
    const r = parseToolCalls(block(invoke('f', body)), fgh);
    expect(r.toolCalls[0]!.function.arguments).toBe('{"b":"1","2":"two","a":{"9":"x","1":"y"}}');
  });

  it('drops a call to a tool the request did not offer, numbering the others without a gap', () => {
    const text = `A${block(invoke('nope', el('a', '1')), invoke('f', el('a', '2')))}B`;
    const r = parseToolCalls(text, fgh, ids);
    expect(r.content).toBe('AB');
    expect(r.toolCalls.map((c) => [c.id, c.function.name, c.function.arguments])).toEqual([
      ['call_0', 'f', '{"a":"2"}'],
    ]);
    expect(parseToolCalls(block(invoke('nope', '')), fgh)).toEqual({ content: '', toolCalls: [] });
  });

  it('returns several invokes and blocks as indexed calls, text outside as content', () => {
    const text = `A${block(invoke('f', el('a', '1')), invoke('g', ''))}B${block(invoke('h', ''))}C`;
    const r = parseToolCalls(text, fgh, ids);
    expect(r.content).toBe('ABC');
    expect(r.toolCalls.map((c) => [c.id, c.function.name, c.function.arguments])).toEqual([
      ['call_0', 'f', '{"a":"1"}'],
      ['call_1', 'g', '{}'],
      ['call_2', 'h', '{}'],
    ]);
  });

  it('normalises whitespace between the marker and the tag', () => {
    const text = `${NS} <tool_call>\n${NS}\n<invoke name="f">${NS}\t<a>1${NS} </a>${NS}</invoke>${NS}\r\n</tool_call>`;
    expect(parseToolCalls(text, fgh).toolCalls[0]!.function).toEqual({
      name: 'f',
      arguments: '{"a":"1"}',
    });
  });

  it('keeps angle brackets, quotes and markup-like text inside a string value', () => {
    const value = 'a < b > c "q" \\ <city>x</city>\n';
    const r = parseToolCalls(block(invoke('make_plan', el('title', value))), [planTool]);
    expect(JSON.parse(r.toolCalls[0]!.function.arguments)).toEqual({ title: value });
  });

  it.each([
    ['1_000', { type: 'integer' }, 1000],
    ['+7', { type: 'integer' }, 7],
    ['007', { type: 'integer' }, 7],
    ['0x10', { type: 'integer' }, '0x10'],
    ['4.0', { type: 'integer' }, '4.0'],
    ['1e3', { type: 'integer' }, '1e3'],
    ['4.0', { type: ['integer', 'number'] }, 4],
    ['1e3', { type: 'number' }, 1000],
    ['.5', { type: 'number' }, 0.5],
    ['5.', { type: 'number' }, 5],
    ['inf', { type: 'number' }, 'inf'],
    ['nan', { type: 'number' }, 'nan'],
    ['2', { enum: [1, 2, 3] }, 2],
    ['2', { enum: ['1', '2'] }, '2'],
    ['true', { const: true }, true],
    ['null', { anyOf: [{ type: 'string' }, { type: 'null' }] }, null],
    ['', { type: ['string', 'null'] }, null],
    ['', { type: 'integer' }, ''],
    [' on ', { type: 'boolean' }, true],
  ])('casts %j as %j to %j', (text, schema, expected) => {
    const tool: ToolSpec = {
      type: 'function',
      function: { name: 'f', parameters: { type: 'object', properties: { v: schema } } },
    };
    const r = parseToolCalls(block(invoke('f', el('v', text))), [tool]);
    expect(JSON.parse(r.toolCalls[0]!.function.arguments)).toEqual({ v: expected });
  });

  it('writes integers beyond 2^53 with their exact digits', () => {
    const tool: ToolSpec = {
      type: 'function',
      function: {
        name: 'f',
        parameters: {
          type: 'object',
          properties: { i: { type: 'integer' }, x: { type: 'number' } },
        },
      },
    };
    const r = parseToolCalls(
      block(invoke('f', el('i', '123456789012345678901234567890') + el('x', '1e22'))),
      [tool],
    );
    expect(r.toolCalls[0]!.function.arguments).toBe(
      '{"i":123456789012345678901234567890,"x":10000000000000000000000}',
    );
  });

  it.each([
    ['mismatched closing tag', block(invoke('f', `${NS}<a>1${NS}</b>`))],
    ['text between invokes', block(`junk${invoke('f', '')}`)],
    ['invoke without name', block(`${NS}<invoke>${NS}</invoke>`)],
    ['element inside a typed scalar', block(invoke('make_plan', el('minutes', el('x', '1'))))],
    ['malformed call to an unknown tool', block(invoke('nope', `${NS}<a>1${NS}</b>`))],
    ['text after a nested element', block(invoke('f', el('o', el('k', '1') + 'tail')))],
    ['never closed', `${NS}<tool_call>\n${invoke('f', el('a', '1'))}`],
  ])('returns a malformed block as content: %s', (_name, bad) => {
    const text = `before ${bad} after${block(invoke('ok', ''))}`;
    const r = parseToolCalls(text, [planTool, ...fgh], ids);
    if (_name === 'never closed') {
      expect(r).toEqual({ content: text, toolCalls: [] });
    } else {
      expect(r.content).toBe(`before ${bad} after`);
      expect(r.toolCalls.map((c) => [c.id, c.function.name])).toEqual([['call_0', 'ok']]);
    }
  });

  it('leaves text with stray markers alone', () => {
    const text = `a ${NS} b ${NS}<b>x</b> ]<]mini`;
    expect(parseToolCalls(text, fgh)).toEqual({ content: text, toolCalls: [] });
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
  const tools = [planTool, ...fgh];
  const text =
    `Sure.${block(invoke('make_plan', planXml), invoke('nope', el('x', '1')), invoke('f', el('q', 'x') + el('r', '1') + el('q', 'y')))}` +
    ` Mid ${NS} text.${block(invoke('g', el('a', el('item', '1'))))}` +
    `${block(invoke('f', `${NS}<a>1${NS}</b>`))} Done.`;

  it('matches the non-streaming result for every single cut', () => {
    const whole = parseToolCalls(text, tools, ids);
    expect(whole.toolCalls.map((c) => c.function.name)).toEqual(['make_plan', 'f', 'g']);
    for (let i = 0; i <= text.length; i++) {
      const s = streamAll(text, [i], tools);
      expect(s.content).toBe(whole.content);
      expect(collectToolCalls(s.deltas)).toEqual(whole.toolCalls);
    }
  });

  it('matches the non-streaming result when fed one character at a time', () => {
    const cuts = Array.from({ length: text.length }, (_, i) => i);
    const s = streamAll(text, cuts, tools);
    const whole = parseToolCalls(text, tools, ids);
    expect(s.content).toBe(whole.content);
    expect(collectToolCalls(s.deltas)).toEqual(whole.toolCalls);
  });

  it('holds a block until it closes, then emits each call as a name and an arguments delta', () => {
    const p = new ToolCallStreamParser([planTool], ids);
    expect(p.feed(`Hi ${NS}<tool_`)).toEqual({ content: 'Hi ', calls: [] });
    expect(p.feed(`call>\n${NS}<invoke name="make_plan">`).calls).toEqual([]);
    expect(p.feed(`${NS}<title>Lin"e 1\nmore${NS}</title>${NS}<minutes>45${NS}</minutes>`)).toEqual(
      { content: '', calls: [] },
    );
    expect(p.feed(`${NS}<title>again${NS}</title>${NS}</invoke>\n`).calls).toEqual([]);
    expect(p.feed(`${NS}</tool_call> ok`)).toEqual({
      content: ' ok',
      calls: [
        { index: 0, id: 'call_0', type: 'function', name: 'make_plan', arguments: '' },
        { index: 0, arguments: '{"title":["Lin\\"e 1\\nmore","again"],"minutes":45}' },
      ],
    });
    expect(p.finish()).toEqual({ content: '', calls: [] });
  });

  it('does not leak a partial marker as content when the start marker is split', () => {
    // NS repeats its leading "]" at index 2: a hold-back of the shortest prefix would leak "]<".
    const t = `done]${block(invoke('f', el('a', '1')))}`;
    const split = t.indexOf('<tool_call>') - 2;
    const s = streamAll(t, [split], fgh);
    expect(s.content).toBe('done]');
    expect(collectToolCalls(s.deltas).map((c) => c.function.arguments)).toEqual(['{"a":"1"}']);
  });

  it('returns a block that breaks after a complete invoke as content, whole', () => {
    const bad = `${NS}<tool_call>\n${invoke('f', el('a', '1'))}\n${NS}<invoke name="g">${NS}<title>ab${NS}</oops>tail${NS}</tool_call>`;
    const text = `${bad}!${block(invoke('h', ''))}`;
    for (const cut of [0, bad.indexOf('ab') + 1, bad.length, text.length]) {
      const s = streamAll(text, [cut], fgh);
      expect(s.content).toBe(`${bad}!`);
      expect(collectToolCalls(s.deltas).map((c) => [c.id, c.function.name])).toEqual([
        ['call_0', 'h'],
      ]);
    }
  });

  it('returns a block as content when it breaks before any call went out', () => {
    const bad = `x${NS}<tool_call>\nnot a call${NS}</tool_call>y`;
    expect(streamAll(bad, [5, 20], fgh)).toEqual({ content: bad, deltas: [] });
  });

  it('returns a block cut off by the end of the output as content', () => {
    const cut = `${NS}<tool_call>\n${invoke('make_plan', el('minutes', '4'))}${NS}<invoke name="make_plan">${NS}<title>Par`;
    expect(streamAll(cut, [10, 60], [planTool])).toEqual({ content: cut, deltas: [] });
    expect(parseToolCalls(cut, [planTool])).toEqual({ content: cut, toolCalls: [] });
  });

  it('keeps a surrogate pair whole inside a string argument', () => {
    const emoji = `${NS}<tool_call>\n${invoke('make_plan', el('title', 'a😀b'))}\n${NS}</tool_call>`;
    const cut = emoji.indexOf('😀') + 1; // between the two UTF-16 halves
    const s = streamAll(emoji, [cut], [planTool]);
    expect(collectToolCalls(s.deltas)[0]!.function.arguments).toBe('{"title":"a😀b"}');
  });

  it('agrees with parseToolCalls under random cuts', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 10 }), (cuts) => {
        const s = streamAll(text, cuts, tools);
        const whole = parseToolCalls(text, tools, ids);
        expect(s.content).toBe(whole.content);
        expect(collectToolCalls(s.deltas)).toEqual(whole.toolCalls);
      }),
      { numRuns: 200 },
    );
  });
});
