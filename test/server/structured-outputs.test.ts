import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR } from '../../src/cli/serve-command.js';
import { type JsonSchema, validateJson } from '../../src/eval/json-schema-lite.js';
import { loadTokenizer } from '../../src/tokenizer/load-tokenizer.js';
import { serveModel } from '../serve-model.js';

// Structured outputs through the official client against the bundled model (CPU): forced tool
// calls (grammar of the M3 call format) and response_format json_schema (xgrammar), 100 sampled
// tries each with distinct seeds, all in flight at once. Every output must be schema-valid.
const TRIES = Number(process.env['TRIES'] ?? 100);
const tok = loadTokenizer(BUNDLED_MODEL_DIR);

const tools: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Get the current weather in a city.',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', description: 'The city name' },
          unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        },
        required: ['city'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'convert_currency',
      description: 'Convert an amount of money from one currency to another.',
      parameters: {
        type: 'object',
        properties: {
          amount: { type: 'integer', description: 'The amount to convert' },
          from_currency: { type: 'string' },
          to_currency: { type: 'string' },
        },
        required: ['amount', 'from_currency', 'to_currency'],
      },
    },
  },
];

const weatherSchema = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 24 },
    temperature: { type: 'integer', minimum: -60, maximum: 60 },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    sunny: { type: 'boolean' },
  },
  required: ['city', 'temperature', 'unit', 'sunny'],
  additionalProperties: false,
};

const questions = [
  'What is the weather in Paris?',
  'Convert 20 USD to EUR.',
  'Tell me a joke.',
  'What time is it in Oslo?',
  'How warm is it in Lima today?',
];

/** Why a call is not a schema-valid call of one of `allowed`, or undefined when it is. */
function callProblem(call: OpenAI.ChatCompletionMessageToolCall | undefined, allowed: string[]) {
  if (!call || call.type !== 'function') return 'no function call';
  const tool = tools.find((t) => t.type === 'function' && t.function.name === call.function.name);
  if (!tool || tool.type !== 'function' || !allowed.includes(call.function.name))
    return `called ${call.function.name}`;
  let args: unknown;
  try {
    args = JSON.parse(call.function.arguments);
  } catch {
    return `arguments are not JSON: ${call.function.arguments}`;
  }
  const errors = validateJson(tool.function.parameters as JsonSchema, args);
  return errors.length > 0 ? errors.join('; ') : undefined;
}

function weatherProblem(content: string | null | undefined): string | undefined {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(content ?? '') as Record<string, unknown>;
  } catch {
    return `not JSON: ${content}`;
  }
  const errors = validateJson(weatherSchema as JsonSchema, v);
  // Keywords json-schema-lite does not check.
  if (typeof v['city'] === 'string' && [...v['city']].length > 24)
    errors.push(`city too long: ${JSON.stringify(v['city'])}`);
  const t = v['temperature'];
  if (typeof t === 'number' && (t < -60 || t > 60)) errors.push(`temperature ${t} out of range`);
  return errors.length > 0 ? errors.join('; ') : undefined;
}

describe('structured outputs over HTTP (bundled model)', () => {
  let client: OpenAI;
  let url = '';
  let close: () => Promise<void> = async () => {};

  beforeAll(async () => {
    const served = await serveModel(BUNDLED_MODEL_DIR, { maxNumSeqs: 128 });
    url = served.url;
    close = served.close;
    client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'x', maxRetries: 0, timeout: 600_000 });
  });
  afterAll(() => close());

  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return {
      status: res.status,
      body: (await res.json()) as { error?: { param: string; message: string } },
    };
  };
  const chat = { model: 'tiny', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 60 };

  it('answers invalid response_format with a 400 naming the field', async () => {
    const schema = (s: unknown) => ({
      ...chat,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: s } },
    });
    let r = await post('/v1/chat/completions', schema({ type: 'foo' }));
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ param: 'response_format.json_schema.schema' });
    expect(r.body.error!.message).toMatch(/Unsupported type "foo"/);
    r = await post('/v1/chat/completions', schema({ type: 'string', pattern: '[a-' }));
    expect(r.body.error?.param).toBe('response_format.json_schema.schema');
    r = await post('/v1/chat/completions', { ...chat, response_format: { type: 'xml' } });
    expect(r.body.error?.param).toBe('response_format.type');
    r = await post('/v1/chat/completions', { ...chat, response_format: { type: 'json_schema' } });
    expect(r.body.error?.param).toBe('response_format.json_schema');
    r = await post('/v1/chat/completions', {
      ...chat,
      tools,
      tool_choice: 'required',
      response_format: { type: 'json_object' },
    });
    expect(r.body.error?.param).toBe('response_format');
  });

  it('json_object gives a JSON object on chat and completions', async () => {
    const replies = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        client.chat.completions.create({
          ...chat,
          messages: [{ role: 'user', content: 'Answer in JSON.' }],
          max_tokens: 200,
          seed: i,
          temperature: 0.7,
          response_format: { type: 'json_object' },
        }),
      ),
    );
    for (const r of replies) {
      const c = r.choices[0]!;
      expect(c.message.content!.startsWith('{')).toBe(true);
      // A free-form object from this model may not close within 200 tokens; those that do parse.
      if (c.finish_reason !== 'stop') continue;
      const v = JSON.parse(c.message.content!) as unknown;
      expect(typeof v === 'object' && v !== null && !Array.isArray(v)).toBe(true);
    }
    // logit_bias composes with the grammar: with "}" favoured and every token holding a quote
    // (which would open a key, inside which "}" is only a character) banned, the one object
    // the grammar leaves is {}, and after it only the end of text.
    const close = tok.encode('}', { addSpecialTokens: false })[0]!;
    const bias: Record<string, number> = { [String(close)]: 100 };
    for (let id = 0; id < tok.vocabSize; id++) if (tok.decode([id]).includes('"')) bias[id] = -100;
    expect(Object.keys(bias).length).toBeGreaterThan(1);
    const closed = await client.completions.create({
      model: 'tiny',
      prompt: 'JSON:',
      max_tokens: 40,
      temperature: 0,
      logit_bias: bias,
      response_format: { type: 'json_object' },
    } as OpenAI.CompletionCreateParamsNonStreaming);
    expect(closed.choices[0]!.finish_reason).toBe('stop');
    expect(JSON.parse(closed.choices[0]!.text)).toEqual({});
    const done = await client.completions.create({
      model: 'tiny',
      prompt: 'JSON:',
      max_tokens: 120,
      temperature: 0,
      response_format: { type: 'json_schema', json_schema: { name: 'w', schema: weatherSchema } },
    } as OpenAI.CompletionCreateParamsNonStreaming);
    expect(weatherProblem(done.choices[0]!.text)).toBeUndefined();
  });

  async function forcedCalls(choice: OpenAI.ChatCompletionToolChoiceOption, allowed: string[]) {
    const replies = await Promise.all(
      Array.from({ length: TRIES }, (_, i) =>
        client.chat.completions.create({
          model: 'tiny',
          messages: [{ role: 'user', content: questions[i % questions.length]! }],
          tools,
          tool_choice: choice,
          temperature: 1,
          seed: 1000 + i,
          max_tokens: 160,
        }),
      ),
    );
    const problems = replies.map((r) => {
      const c = r.choices[0]!;
      if (c.finish_reason !== 'tool_calls') return `finish_reason ${c.finish_reason}`;
      return callProblem(c.message.tool_calls?.[0], allowed);
    });
    const distinct = new Set(replies.map((r) => JSON.stringify(r.choices[0]!.message)));
    console.log(
      `${JSON.stringify(choice)}: ${TRIES - problems.filter(Boolean).length}/${TRIES} valid`,
    );
    return { problems: problems.filter((p) => p !== undefined), distinct: distinct.size };
  }

  it(`tool_choice "required" gives a schema-valid call in >= 99 of ${TRIES} tries`, async () => {
    const { problems, distinct } = await forcedCalls('required', [
      'get_weather',
      'convert_currency',
    ]);
    expect(problems.length, problems.join('\n')).toBeLessThanOrEqual(1);
    expect(distinct).toBeGreaterThan(TRIES / 10);
  }, 600_000);

  it(`a named function gives a schema-valid call to it in >= 99 of ${TRIES} tries`, async () => {
    const named = { type: 'function', function: { name: 'convert_currency' } } as const;
    const { problems, distinct } = await forcedCalls(named, ['convert_currency']);
    expect(problems.length, problems.join('\n')).toBeLessThanOrEqual(1);
    expect(distinct).toBeGreaterThan(TRIES / 10);
  }, 600_000);

  it(`response_format json_schema gives schema-valid JSON in ${TRIES} of ${TRIES} tries`, async () => {
    const replies = await Promise.all(
      Array.from({ length: TRIES }, (_, i) =>
        client.chat.completions.create({
          model: 'tiny',
          messages: [
            { role: 'user', content: `${questions[i % questions.length]} Answer in JSON.` },
          ],
          temperature: 1,
          seed: 2000 + i,
          max_tokens: 200,
          response_format: {
            type: 'json_schema',
            json_schema: { name: 'weather', schema: weatherSchema, strict: true },
          },
        }),
      ),
    );
    const problems = replies
      .map((r) => weatherProblem(r.choices[0]!.message.content))
      .filter((p) => p !== undefined);
    expect(problems, problems.join('\n')).toEqual([]);
    expect(replies.every((r) => r.choices[0]!.finish_reason === 'stop')).toBe(true);
    expect(new Set(replies.map((r) => r.choices[0]!.message.content)).size).toBeGreaterThan(
      TRIES / 10,
    );
  }, 600_000);
});
