import { Template } from '@huggingface/jinja';
import { describe, expect, it } from 'vitest';
import {
  assistantMessage,
  formatToolCalls,
  renderCompletion,
  renderPrompt,
  type ToolSpec,
} from './m3-format.js';
import { M3_CHAT_TEMPLATE } from './m3-format.js';

const NS = ']<]minimax[>[';
const weather: ToolSpec = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather now.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('M3 chat format', () => {
  it('renders a plain question with the default system turn and generation prompt', () => {
    expect(renderPrompt([{ role: 'user', content: 'Hi' }])).toBe(
      ']~!b[]~b]system\nYou are a helpful assistant.[e~[\n]~b]user\nHi[e~[\n]~b]ai\n',
    );
  });

  it('renders a completion with reasoning, content and the end-of-turn token', () => {
    expect(renderCompletion({ reasoning: '2 + 2 = 4.', content: '#### 4' })).toBe(
      '<mm:think>2 + 2 = 4.</mm:think>#### 4[e~[',
    );
  });

  it('formats tool calls exactly as the template renders a past assistant turn', () => {
    const turn = {
      reasoning: 'x',
      content: '',
      toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris', days: 3 } }],
    };
    const block = formatToolCalls(turn.toolCalls);
    expect(block).toBe(
      `${NS}<tool_call>\n${NS}<invoke name="get_weather">${NS}<city>Paris${NS}</city>` +
        `${NS}<days>3${NS}</days>${NS}</invoke>\n${NS}</tool_call>`,
    );
    const text = renderPrompt(
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather?' },
        assistantMessage(turn, 'c'),
        { role: 'tool', content: '{"t": 1}' },
        { role: 'tool', content: '{"t": 2}' },
      ],
      [weather],
    );
    expect(text).toMatch(
      /^\]~!b\[\]~b\]system\nYou are a helpful assistant\.\[e~\[\n\]~b\]developer\nBe brief\.\n\n# Tools\n/,
    );
    expect(text).toContain(`<tool>{"name": "get_weather", "description": "Weather now."`);
    expect(text).toContain(`]~b]user\nWeather?[e~[\n]~b]ai\n</mm:think>${block}[e~[\n`);
    expect(text).toContain(
      ']~b]tool\n<response>{"t": 1}</response>\n<response>{"t": 2}</response>[e~[\n',
    );
    expect(text.endsWith('[e~[\n]~b]ai\n')).toBe(true);
  });

  it('opens the reasoning when thinking_mode is enabled and renders nested arguments', () => {
    const t = new Template(M3_CHAT_TEMPLATE);
    const out = t.render({
      messages: [
        { role: 'user', content: 'q' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ function: { name: 'f', arguments: { a: [1, 2], b: { c: true } } } }],
        },
      ],
      add_generation_prompt: true,
      thinking_mode: 'enabled',
    });
    expect(out).toContain(
      `${NS}<a>${NS}<item>1${NS}</item>${NS}<item>2${NS}</item>${NS}</a>${NS}<b>${NS}<c>true${NS}</c>${NS}</b>`,
    );
    expect(out.endsWith(']~b]ai\n<mm:think>')).toBe(true);
  });
});
