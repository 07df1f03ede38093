import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { goldenCase } from '../golden-dir.js';

// `moeserve serve --tp 2` (rank 0 serves HTTP, rank 1 a worker process, CPU communicator)
// must answer with the same greedy tokens and logprobs as a single rank.
const started: ChildProcess[] = [];

async function serve(extra: string[]): Promise<string> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'serve',
      '--model',
      goldenCase('tiny-moe'),
      '--port',
      '0',
      ...extra,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  started.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /serving \S+ at (http:\/\/[^/]+)\/v1/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
  });
}

async function complete(url: string): Promise<{ text: string; logprobs: number[] }> {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'tiny-moe',
      prompt: [5, 17, 99, 3, 200, 41, 7, 8, 9, 10, 11, 12, 13],
      max_tokens: 12,
      temperature: 0,
      logprobs: 1,
    }),
  });
  const body = (await res.json()) as {
    choices: { text: string; logprobs: { token_logprobs: number[] } }[];
  };
  return { text: body.choices[0]!.text, logprobs: body.choices[0]!.logprobs.token_logprobs };
}

describe('serve --tp 2', () => {
  afterAll(() => {
    for (const c of started) c.kill('SIGTERM');
  });

  it('gives the single-rank greedy tokens and logprobs', async () => {
    const [one, two] = await Promise.all([serve([]), serve(['--tp', '2'])]);
    const a = await complete(one);
    const b = await complete(two);
    expect(b.text).toBe(a.text);
    expect(b.logprobs).toHaveLength(12);
    b.logprobs.forEach((lp, i) => expect(lp).toBeCloseTo(a.logprobs[i]!, 4));
  });
});
