import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GenerateRequest } from '../../src/engine/engine-types.js';
import { createServer } from '../../src/server/http-server.js';
import { chatRenderer, outputParsers } from '../../src/server/text-adapters.js';
import { FakeEngine } from './fake-engine.js';
import { EOS_ID, fakeTokenizer, ids } from './fake-text.js';
import { MODEL } from './harness.js';

const NS = ']<]minimax[>[';
const WEATHER_CALL =
  `${NS}<tool_call>\n${NS}<invoke name="get_weather">${NS}<city>Paris${NS}</city>` +
  `${NS}<days>3${NS}</days>${NS}</invoke>\n${NS}</tool_call>`;

/** Scripted M3-format replies, picked by the last user message in the rendered prompt. */
function respond(req: GenerateRequest) {
  const prompt = fakeTokenizer.decode(req.promptIds, { skipSpecialTokens: false });
  const user = prompt.slice(prompt.lastIndexOf(']~b]user\n'));
  const reply = (text: string) => ({ tokens: [...ids(text), EOS_ID] });
  if (prompt.endsWith('<invoke name="get_weather">'))
    return reply(`${NS}<city>Rome${NS}</city>${NS}</invoke>\n${NS}</tool_call>`);
  if (prompt.endsWith('<mm:think>')) return reply('Prefilled thoughts</mm:think>Answer.');
  if (user.includes('weather')) return reply(`<mm:think>Need weather.</mm:think>${WEATHER_CALL}`);
  return reply('<mm:think>Let me think.</mm:think>The answer is 4.');
}

const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, days: { type: 'integer' } },
        required: ['city'],
      },
    },
  },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object' } } },
];

let engine: FakeEngine;
let client: OpenAI;
let baseUrl: string;
let close: () => Promise<void>;
beforeAll(async () => {
  engine = new FakeEngine({ respond, maxModelLen: 4096 });
  const app = createServer({
    engine,
    tokenizer: fakeTokenizer,
    modelName: MODEL,
    chatTemplate: chatRenderer(undefined),
    parsers: outputParsers({ reasoning: 'minimax-m3', toolCall: 'minimax-m3' }),
    options: { processMetrics: false },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  baseUrl = `http://127.0.0.1:${port}`;
  client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'x', maxRetries: 0 });
  close = () => app.close();
});
afterAll(() => close());

const lastPrompt = () =>
  fakeTokenizer.decode(engine.requests.at(-1)!.promptIds, { skipSpecialTokens: false });

type Message = OpenAI.Chat.Completions.ChatCompletionMessage & { reasoning_content?: string };
type Delta = OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta & {
  reasoning_content?: string;
};

async function collectStream(stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>) {
  let content = '';
  let reasoning = '';
  let finish: string | null = null;
  const calls: { id?: string; name: string; args: string }[] = [];
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    const delta = choice.delta as Delta;
    content += delta.content ?? '';
    reasoning += delta.reasoning_content ?? '';
    for (const tc of delta.tool_calls ?? []) {
      const c = (calls[tc.index] ??= { name: '', args: '' });
      if (tc.id) c.id = tc.id;
      c.name += tc.function?.name ?? '';
      c.args += tc.function?.arguments ?? '';
    }
    finish = choice.finish_reason ?? finish;
  }
  return { content, reasoning, finish, calls };
}

describe('reasoning split (minimax-m3)', () => {
  it('puts <mm:think> text in reasoning_content, non-streaming', async () => {
    const r = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'what is 2+2?' }],
    });
    const m = r.choices[0]!.message as Message;
    expect(m.reasoning_content).toBe('Let me think.');
    expect(m.content).toBe('The answer is 4.');
    expect(r.choices[0]!.finish_reason).toBe('stop');
  });

  it('streams reasoning and content deltas without leaking markers', async () => {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'what is 2+2?' }],
      stream: true,
    });
    const out = await collectStream(stream);
    expect(out).toMatchObject({
      reasoning: 'Let me think.',
      content: 'The answer is 4.',
      finish: 'stop',
    });
  });

  it('starts inside reasoning when chat_template_kwargs prefill the opener', async () => {
    const r = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'hard question' }],
      // @ts-expect-error vLLM extension field
      chat_template_kwargs: { thinking_mode: 'enabled' },
    });
    expect(lastPrompt().endsWith('<mm:think>')).toBe(true);
    const m = r.choices[0]!.message as Message;
    expect(m.reasoning_content).toBe('Prefilled thoughts');
    expect(m.content).toBe('Answer.');
  });
});

describe('tool calls (minimax-m3)', () => {
  it('returns typed tool_calls and finish_reason "tool_calls", non-streaming', async () => {
    const r = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      tools,
    });
    expect(lastPrompt()).toContain('get_weather');
    const choice = r.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect((choice.message as Message).reasoning_content).toBe('Need weather.');
    const call = choice.message.tool_calls![0]!;
    expect(call.type).toBe('function');
    expect(call.id).toMatch(/^call_/);
    if (call.type !== 'function') throw new Error('expected a function call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris', days: 3 });
  });

  it('streams the call name first, then argument fragments', async () => {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      tools,
      stream: true,
    });
    const out = await collectStream(stream);
    expect(out.finish).toBe('tool_calls');
    expect(out.reasoning).toBe('Need weather.');
    expect(out.content.trim()).toBe('');
    expect(out.calls).toHaveLength(1);
    expect(out.calls[0]!.id).toMatch(/^call_/);
    expect(out.calls[0]!.name).toBe('get_weather');
    expect(JSON.parse(out.calls[0]!.args)).toEqual({ city: 'Paris', days: 3 });
  });

  it('forces a named function by prefilling the call', async () => {
    for (const stream of [false, true]) {
      const req = {
        model: MODEL,
        messages: [{ role: 'user' as const, content: 'anything' }],
        tools,
        tool_choice: { type: 'function' as const, function: { name: 'get_weather' } },
      };
      const calls = stream
        ? (
            await collectStream(await client.chat.completions.create({ ...req, stream: true }))
          ).calls.map((c) => ({ name: c.name, args: c.args }))
        : (await client.chat.completions.create(req)).choices[0]!.message.tool_calls!.map((c) => {
            if (c.type !== 'function') throw new Error('expected a function call');
            return { name: c.function.name, args: c.function.arguments };
          });
      expect(lastPrompt()).not.toContain('get_time');
      expect(calls).toHaveLength(1);
      expect(calls[0]!.name).toBe('get_weather');
      expect(JSON.parse(calls[0]!.args)).toEqual({ city: 'Rome' });
    }
  });

  it('leaves tool markup as content with tool_choice "none"', async () => {
    const r = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      tools,
      tool_choice: 'none',
    });
    expect(lastPrompt()).not.toContain('get_weather');
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(r.choices[0]!.message.tool_calls).toBeUndefined();
    expect(r.choices[0]!.message.content).toContain('<tool_call>');
  });

  it('renders a multi-turn conversation with a tool result', async () => {
    const r = await client.chat.completions.create({
      model: MODEL,
      tools,
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris","days":3}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
        { role: 'user', content: 'thanks, and 2+2?' },
      ],
    });
    const prompt = lastPrompt();
    expect(prompt).toContain('<response>sunny</response>');
    expect(prompt).toContain(`${NS}<invoke name="get_weather">${NS}<city>Paris${NS}</city>`);
    expect((r.choices[0]!.message as Message).content).toBe('The answer is 4.');
  });
});

describe('/metrics finish reasons', () => {
  const finishes = async (reason: string): Promise<number> => {
    const text = await (await fetch(`${baseUrl}/metrics`)).text();
    const m = new RegExp(
      `moeserve_request_finish_total\\{finish_reason="${reason}"\\} (\\d+)`,
    ).exec(text);
    return m ? Number(m[1]) : 0;
  };

  it('counts a reply with tool calls as tool_calls (vLLM label values), streamed or not', async () => {
    const before = { calls: await finishes('tool_calls'), stop: await finishes('stop') };
    const messages = [{ role: 'user' as const, content: 'weather in Paris?' }];
    const r = await client.chat.completions.create({ model: MODEL, messages, tools });
    expect(r.choices[0]!.finish_reason).toBe('tool_calls');
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages,
      tools,
      stream: true,
    });
    for await (const _ of stream) void _;
    await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(await finishes('tool_calls')).toBe(before.calls + 2);
    expect(await finishes('stop')).toBe(before.stop + 1);
  });
});
