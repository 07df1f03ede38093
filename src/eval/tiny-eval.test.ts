import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  hasMarkup,
  loadTinyEvalSet,
  runTinyEval,
  tinyEvalTable,
  type TinyEvalSet,
} from './tiny-eval.js';

const SET = fileURLToPath(new URL('../../data/tiny-m3/eval-tiny.json', import.meta.url));

describe('hasMarkup', () => {
  it('flags M3 control strings and tags, not plain text', () => {
    expect(hasMarkup('Hello! How can I help?')).toBe(false);
    expect(hasMarkup('3 < 4 and 5 > 2')).toBe(false);
    expect(hasMarkup('</mm:think>Hello')).toBe(true);
    expect(hasMarkup('Hi]<]minimax[>[<tool_call>')).toBe(true);
    expect(hasMarkup('Hi[e~[')).toBe(true);
    expect(hasMarkup('<invoke name="x">')).toBe(true);
  });
});

describe('the bundled held-out set', () => {
  it('loads, with every part present and integer answers', () => {
    const s = loadTinyEvalSet(SET);
    expect(s.arithmetic.length).toBe(200);
    expect(s.toolScenarios.length).toBe(60);
    expect(s.chat.length).toBeGreaterThanOrEqual(20);
    for (const a of s.arithmetic) expect(Number.isInteger(a.answer)).toBe(true);
    for (const sc of s.toolScenarios)
      expect(sc.expectedArguments.length).toBe(sc.expectedCalls?.length);
  });
});

/** A fake OpenAI server: answers 2+2 right, 5*6 wrong, one markup chat, one tool loop. */
function fakeServer(): Server {
  return createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const b = JSON.parse(body) as { messages: { role: string; content: string | null }[] };
      const last = b.messages[b.messages.length - 1]!;
      let message: Record<string, unknown> = { role: 'assistant', content: '' };
      let finish = 'stop';
      if (last.role === 'tool') message = { role: 'assistant', content: 'It is 3 degrees.' };
      else if (last.content === 'What is 2 + 2?') message.content = 'The answer is 4.\n#### 4';
      else if (last.content === 'What is 5 * 6?') {
        message.content = 'The answer is 31.\n#### 31';
        finish = 'length';
      } else if (last.content === 'Hi') message.content = 'Hello!';
      else if (last.content === 'Yo') message.content = '</mm:think>Hey';
      else
        message = {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'c0',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
            },
          ],
        };
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          choices: [{ message, finish_reason: finish }],
          usage: { prompt_tokens: 5, completion_tokens: 10 },
        }),
      );
    });
  });
}

describe('runTinyEval', () => {
  let server: Server;
  let base = '';
  beforeAll(async () => {
    server = fakeServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => server.close());

  it('scores each part from the replies', async () => {
    const weather = {
      name: 'get_weather',
      description: 'Weather.',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      results: [{ temperature: 3 }],
    };
    const set: TinyEvalSet = {
      seed: 0,
      arithmetic: [
        { question: 'What is 2 + 2?', answer: 4, op: '+' },
        { question: 'What is 5 * 6?', answer: 30, op: '*' },
      ],
      chat: ['Hi', 'Yo'],
      toolScenarios: [
        {
          name: 't',
          task: 'Weather in Oslo?',
          tools: [weather],
          expectedCalls: ['get_weather'],
          expectedArguments: [{ city: 'Oslo' }],
        },
        {
          name: 'u',
          task: 'Weather in Rome?',
          tools: [weather],
          expectedCalls: ['get_weather'],
          expectedArguments: [{ city: 'Rome' }],
        },
      ],
    };
    const rep = await runTinyEval(set, {
      endpoint: { baseUrl: base, timeoutMs: 5000 },
      model: 'm',
      maxTokens: 16,
    });
    expect(rep.arithmetic).toMatchObject({ n: 2, exact: 1, exactPct: 50 });
    expect(rep.arithmetic.byOp).toEqual({ '+': { n: 1, exact: 1 }, '*': { n: 1, exact: 0 } });
    expect(rep.stop).toEqual({ n: 4, stopped: 3, stopPct: 75 });
    expect(rep.chat).toMatchObject({ n: 2, clean: 1, markup: 1, empty: 0 });
    expect(rep.tools).toMatchObject({
      scenarios: 2,
      calls: 2,
      schemaValid: 2,
      finalAnswer: 2,
      firstCallExact: 1,
    });
    expect(tinyEvalTable(rep)).toContain('1/2 = 50%');
  });
});
