import { spawn, type ChildProcess } from 'node:child_process';
import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';

// `moeserve serve` with the CPU model on its own thread (MOESERVE_MODEL_THREAD=1) against the
// model on the main thread, through real HTTP and the official client, on the bundled model:
// the same greedy answers, streamed and not, and concurrent streams all complete.
const started: ChildProcess[] = [];

/** The server's client, and whether its start-up line says the model has its own thread. */
async function serve(modelThread: '0' | '1'): Promise<{ client: OpenAI; thread: boolean }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--port', '0', '--cpu-threads', '1'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, MOESERVE_MODEL_THREAD: modelThread },
    },
  );
  started.push(child);
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /serving \S+ at http:\/\/[^/]+\/v1 .*\n/.exec(out);
      if (m) resolve(m[0]);
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
  });
  const url = /at (http:\/\/[^/]+)\/v1/.exec(line)![1]!;
  return {
    client: new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused' }),
    thread: line.includes('model thread'),
  };
}

const QUESTIONS = [
  'What is 12 + 7?',
  'Hello! Who are you?',
  'Tom has 9 apples and eats 4. How many are left?',
];

async function answers(client: OpenAI): Promise<string[]> {
  const one = async (q: string): Promise<string> => {
    const r = await client.chat.completions.create({
      model: 'moeserve-tiny-m3',
      messages: [{ role: 'user', content: q }],
      temperature: 0,
      max_tokens: 48,
    });
    const m = r.choices[0]!.message as { content: string | null; reasoning_content?: string };
    return `${m.reasoning_content ?? ''}|${m.content ?? ''}|${r.choices[0]!.finish_reason}`;
  };
  return Promise.all(QUESTIONS.map(one));
}

async function streamed(client: OpenAI, q: string): Promise<string> {
  const s = await client.chat.completions.create({
    model: 'moeserve-tiny-m3',
    messages: [{ role: 'user', content: q }],
    temperature: 0,
    max_tokens: 48,
    stream: true,
  });
  let reasoning = '';
  let content = '';
  let finish = '';
  for await (const c of s) {
    const d = c.choices[0]?.delta as { content?: string | null; reasoning_content?: string };
    reasoning += d?.reasoning_content ?? '';
    content += d?.content ?? '';
    finish = c.choices[0]?.finish_reason ?? finish;
  }
  return `${reasoning}|${content}|${finish}`;
}

describe('serve with the CPU model on its own thread', () => {
  afterAll(() => {
    for (const c of started) c.kill('SIGTERM');
  });

  it('answers as the model on the main thread does, streamed and not', async () => {
    const [t, m] = await Promise.all([serve('1'), serve('0')]);
    expect([t.thread, m.thread]).toEqual([true, false]);
    const [threaded, main] = [t.client, m.client];
    const want = await answers(main);
    expect(await answers(threaded)).toEqual(want);
    expect(want.every((a) => a.split('|')[2] === 'stop' || a.split('|')[2] === 'length')).toBe(
      true,
    );
    const streams = await Promise.all(QUESTIONS.map((q) => streamed(threaded, q)));
    expect(streams).toEqual(want);
  });
});
