import { afterEach, describe, expect, it } from 'vitest';
import type { ScriptedRequest } from '../bench/scripted-reply.js';
import { ScriptedServer } from '../bench/scripted-server.js';
import { DEFAULT_GSM8K_TRAIN, loadGsm8k, type Gsm8kItem } from './gsm8k-dataset.js';
import {
  fewShotMessages,
  fewShotPrompt,
  GSM8K_STOP,
  runGsm8k,
  scoreResponse,
} from './gsm8k-eval.js';

const shots: Gsm8kItem[] = [
  { question: 'One plus one?', answer: '1+1=2\n#### 2' },
  { question: 'Two times three?', answer: '2*3=6\n#### 6' },
];

describe('gsm8k prompts', () => {
  it('lays out k shots as lm-eval does', () => {
    expect(fewShotPrompt(shots, 'Four minus one?')).toBe(
      'Question: One plus one?\nAnswer: 1+1=2\n#### 2\n\n' +
        'Question: Two times three?\nAnswer: 2*3=6\n#### 6\n\n' +
        'Question: Four minus one?\nAnswer:',
    );
    expect(fewShotMessages(shots, 'Q?')).toEqual([
      { role: 'user', content: 'Question: One plus one?\nAnswer:' },
      { role: 'assistant', content: '1+1=2\n#### 2' },
      { role: 'user', content: 'Question: Two times three?\nAnswer:' },
      { role: 'assistant', content: '2*3=6\n#### 6' },
      { role: 'user', content: 'Question: Q?\nAnswer:' },
    ]);
  });

  it('takes the first k training examples from the bundled file', () => {
    const train = loadGsm8k(DEFAULT_GSM8K_TRAIN, 5);
    expect(train).toHaveLength(5);
    expect(fewShotPrompt(train, 'x').startsWith(`Question: ${train[0]?.question}\nAnswer: `)).toBe(
      true,
    );
  });

  it('scores both filters on known strings', () => {
    expect(scoreResponse(' 3 - 1 = 2\n#### 2', '#### 2')).toEqual({
      strict: '2',
      flexible: '2',
      strictCorrect: true,
      flexibleCorrect: true,
    });
    expect(scoreResponse('The total is $1,250.', 'x\n#### 1250')).toMatchObject({
      strict: '[invalid]',
      strictCorrect: false,
      flexible: '$1,250.',
      flexibleCorrect: true,
    });
  });
});

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('runGsm8k against the scripted server', () => {
  const items: Gsm8kItem[] = [10, 20, 30, 40].map((n) => ({
    question: `N=${n}?`,
    answer: `#### ${n}`,
  }));
  const reply = (req: ScriptedRequest) => {
    const text = JSON.stringify(req.body['prompt'] ?? req.body['messages']);
    const n = Number(/N=(\d+)\?/g.exec(text.slice(text.lastIndexOf('N=')))?.[1]);
    if (n === 10) return { content: ['So ', `#### ${n}`] };
    if (n === 20) return { content: [`The answer is ${n}.`] }; // format drift: flexible only
    if (n === 30) return { content: ['#### 31'] };
    return { status: 503 };
  };

  for (const mode of ['completions', 'chat'] as const) {
    it(`scores strict and flexible in ${mode} mode and counts errors`, async () => {
      server = await ScriptedServer.start(reply);
      const { result, samples } = await runGsm8k({
        endpoint: { baseUrl: server.url, timeoutMs: 5000 },
        model: 'm',
        mode,
        shots,
        items,
        maxTokens: 64,
        concurrency: 2,
      });
      expect(result).toMatchObject({ n: 4, n_err: 1, strict_match: 0.25, flexible_extract: 0.5 });
      expect(result.invalid_strict).toBe(2);
      expect(result.strict_match_stderr).toBeCloseTo(Math.sqrt((0.25 * 0.75) / 3), 12);
      expect(samples[3]?.error).toMatch(/HTTP 503/);
      const body = server.requests[0]?.body ?? {};
      expect(body['stop']).toEqual(GSM8K_STOP);
      expect(body['temperature']).toBe(0);
      expect(server.requests[0]?.path).toBe(
        mode === 'chat' ? '/v1/chat/completions' : '/v1/completions',
      );
    });
  }
});
