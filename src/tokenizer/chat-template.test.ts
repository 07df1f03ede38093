import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { builtinM3Template, renderChat, selectChatTemplate } from './chat-template.js';
import { loadTokenizer } from './load-tokenizer.js';
import { readTokenizerConfig } from './tokenizer-config.js';

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('builtin MiniMax-M3 template', () => {
  it('renders a first turn with the thinking opener prefilled', () => {
    const r = renderChat(builtinM3Template, [{ role: 'user', content: 'Hi' }], {
      kwargs: { thinking_mode: 'enabled' },
    });
    expect(r.prompt).toMatchInlineSnapshot(`
      "]~!b[]~b]system
      You are a helpful assistant.[e~[
      ]~b]user
      Hi[e~[
      ]~b]ai
      <mm:think>"
    `);
    expect(r.prefilledOpener).toBe(true);
  });

  it('renders system prompt, tools, past tool calls and merged tool results', () => {
    const r = renderChat(
      builtinM3Template,
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris' }] },
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [
            {
              id: 'c1',
              type: 'function',
              function: {
                name: 'get_weather',
                arguments: '{"city":"Paris","days":[1,2],"opts":{"metric":true,"skip":null}}',
              },
            },
            { id: 'c2', type: 'function', function: { name: 'get_time', arguments: {} } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
        { role: 'tool', tool_call_id: 'c2', content: '12:00' },
        { role: 'assistant', content: 'Sunny, noon.' },
        { role: 'user', content: 'Thanks' },
      ],
      { tools: [weatherTool] },
    );
    expect(r.prompt).toMatchInlineSnapshot(`
      "]~!b[]~b]system
      You are a helpful assistant.[e~[
      ]~b]developer
      Be brief.

      # Tools
      You can call the tools listed below; each is given with the JSON Schema of its parameters.
      <tools>
      <tool>{"name": "get_weather", "description": "Weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}</tool>
      </tools>

      To call tools, write one ]<]minimax[>[<tool_call> block holding one ]<]minimax[>[<invoke> element per call. Each argument is an element named after its parameter; objects nest as elements and each list entry is an ]<]minimax[>[<item> element. Example:
      ]<]minimax[>[<tool_call>
      ]<]minimax[>[<invoke name="get_weather">]<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[<days>]<]minimax[>[<item>1]<]minimax[>[</item>]<]minimax[>[<item>2]<]minimax[>[</item>]<]minimax[>[</days>]<]minimax[>[</invoke>
      ]<]minimax[>[</tool_call>[e~[
      ]~b]user
      Weather in Paris[e~[
      ]~b]ai
      </mm:think>Checking.]<]minimax[>[<tool_call>
      ]<]minimax[>[<invoke name="get_weather">]<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[<days>]<]minimax[>[<item>1]<]minimax[>[</item>]<]minimax[>[<item>2]<]minimax[>[</item>]<]minimax[>[</days>]<]minimax[>[<opts>]<]minimax[>[<metric>true]<]minimax[>[</metric>]<]minimax[>[</opts>]<]minimax[>[</invoke>
      ]<]minimax[>[<invoke name="get_time">]<]minimax[>[</invoke>
      ]<]minimax[>[</tool_call>[e~[
      ]~b]tool
      <response>sunny</response>
      <response>12:00</response>[e~[
      ]~b]ai
      </mm:think>Sunny, noon.[e~[
      ]~b]user
      Thanks[e~[
      ]~b]ai
      "
    `);
    expect(r.prefilledOpener).toBe(false);
  });

  it('omits the developer turn without system prompt or tools, and the opener when not asked', () => {
    const r = renderChat(builtinM3Template, [{ role: 'user', content: 'x' }], {
      addGenerationPrompt: false,
      kwargs: { thinking_mode: 'disabled' },
    });
    expect(r.prompt).toBe(']~!b[]~b]system\nYou are a helpful assistant.[e~[\n]~b]user\nx[e~[\n');
  });

  it('tokenizes its markers as single added tokens', () => {
    const tok = loadTokenizer(join(import.meta.dirname, 'fixtures', 'gpt2-style'));
    const { prompt } = renderChat(builtinM3Template, [{ role: 'user', content: 'Hi' }], {
      kwargs: { thinking_mode: 'enabled' },
    });
    const ids = tok.encode(prompt, { addSpecialTokens: false });
    for (const marker of [']~!b[', ']~b]', '[e~[', '<mm:think>']) {
      expect(ids).toContain(tok.tokenToId(marker));
    }
    expect(tok.decode(ids)).toBe(prompt);
  });
});

describe('chat template selection', () => {
  it('uses the model template from tokenizer_config.json', () => {
    const config = readTokenizerConfig(join(import.meta.dirname, 'fixtures', 'gpt2-style'));
    const template = selectChatTemplate(config.chatTemplate);
    const r = renderChat(template, [{ role: 'user', content: 'Hi' }], {
      eosToken: config.eosToken ?? '',
    });
    expect(r.prompt).toBe('<user>Hi[e~[<ai>');
  });

  it('picks tool_use / default from named templates and falls back to the built-in', () => {
    const list = [
      { name: 'default', template: 'D' },
      { name: 'tool_use', template: 'T' },
    ];
    expect(selectChatTemplate(list, { hasTools: true })).toBe('T');
    expect(selectChatTemplate(list)).toBe('D');
    expect(selectChatTemplate([{ name: 'other', template: 'O' }])).toBe('O');
    expect(selectChatTemplate(undefined)).toBe(builtinM3Template);
  });

  it('passes kwargs and surfaces raise_exception and bad content parts as errors', () => {
    const t = '{% if not x %}{{ raise_exception("x is required") }}{% endif %}{{ x }}';
    expect(renderChat(t, [], { kwargs: { x: 'ok' } }).prompt).toBe('ok');
    expect(() => renderChat(t, [])).toThrow(/x is required/);
    expect(() =>
      renderChat(builtinM3Template, [{ role: 'user', content: [{ type: 'image_url' }] }]),
    ).toThrow(/image_url/);
  });
});
