import { describe, expect, it } from 'vitest';

import { builtinM3Template, renderChat } from '../../tokenizer/chat-template.js';

import { parseReasoning } from './reasoning-parser.js';
import { parseToolCalls, type ToolSpec } from './tool-call-parser.js';
import {
  checkToolChoice,
  planToolChoice,
  ToolChoiceError,
  toolChoicePrefill,
} from './tool-choice.js';

const tools: ToolSpec[] = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } },
  { type: 'function', function: { name: 'get_time' } },
];
const call = (name: string) => ({ function: { name } });

describe('planToolChoice', () => {
  it('maps each tool_choice to rendering, parsing and requirements', () => {
    expect(planToolChoice(undefined, tools)).toEqual({
      parse: true,
      promptTools: tools,
      required: false,
    });
    expect(planToolChoice(undefined, [])).toEqual({
      parse: false,
      promptTools: [],
      required: false,
    });
    expect(planToolChoice('none', tools)).toEqual({
      parse: false,
      promptTools: [],
      required: false,
    });
    expect(planToolChoice('required', tools)).toEqual({
      parse: true,
      promptTools: tools,
      required: true,
    });
    const named = { parse: true, promptTools: [tools[1]], required: true, name: 'get_time' };
    expect(planToolChoice({ type: 'function', function: { name: 'get_time' } }, tools)).toEqual(
      named,
    );
    expect(planToolChoice({ type: 'function', name: 'get_time' }, tools)).toEqual(named);
  });

  it('rejects choices the tools cannot satisfy', () => {
    expect(() => planToolChoice('required', [])).toThrow(ToolChoiceError);
    expect(() => planToolChoice({ type: 'function', name: 'nope' }, tools)).toThrow(/nope/);
  });
});

describe('checkToolChoice', () => {
  it('requires a call for required and the named function for a name', () => {
    const required = planToolChoice('required', tools);
    expect(checkToolChoice(required, [])).toMatch(/no tool call/);
    expect(checkToolChoice(required, [call('get_time')])).toBeUndefined();
    const named = planToolChoice({ type: 'function', name: 'get_weather' }, tools);
    expect(checkToolChoice(named, [])).toMatch(/get_weather/);
    expect(checkToolChoice(named, [call('get_weather'), call('get_time')])).toMatch(
      /called "get_time"/,
    );
    expect(checkToolChoice(named, [call('get_weather')])).toBeUndefined();
    expect(checkToolChoice(planToolChoice('auto', tools), [])).toBeUndefined();
  });
});

describe('toolChoicePrefill', () => {
  const prompt = (thinking_mode?: string) =>
    renderChat(builtinM3Template, [{ role: 'user', content: 'weather?' }], {
      tools,
      kwargs: thinking_mode ? { thinking_mode } : {},
    }).prompt;

  it('opens a call block (and the named invoke) after an M3 assistant turn opener', () => {
    const named = planToolChoice({ type: 'function', name: 'get_weather' }, tools);
    expect(toolChoicePrefill(named, prompt())).toBe(
      '</mm:think>]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="get_weather">',
    );
    expect(toolChoicePrefill(planToolChoice('required', tools), 'x]~b]ai\n</mm:think>')).toBe(
      ']<]minimax[>[<tool_call>\n',
    );
  });

  it('forces nothing when not required, while reasoning, or on foreign prompts', () => {
    expect(toolChoicePrefill(planToolChoice('auto', tools), prompt())).toBe('');
    expect(toolChoicePrefill(planToolChoice('required', tools), prompt('enabled'))).toBe('');
    expect(toolChoicePrefill(planToolChoice('required', tools), '<|im_start|>assistant\n')).toBe(
      '',
    );
  });

  it('parses prefill plus model output into the forced call', () => {
    const plan = planToolChoice({ type: 'function', name: 'get_weather' }, tools);
    const output =
      ']<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>';
    const split = parseReasoning(toolChoicePrefill(plan, prompt()) + output);
    expect(split.reasoning).toBe('');
    const parsed = parseToolCalls(split.content, tools);
    expect(parsed.content).toBe('');
    expect(parsed.toolCalls[0]!.function).toEqual({
      name: 'get_weather',
      arguments: '{"city":"Paris"}',
    });
    expect(checkToolChoice(plan, parsed.toolCalls)).toBeUndefined();
  });
});
