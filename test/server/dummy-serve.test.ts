import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeRandomCheckpoint } from '../../src/model/weights/random-checkpoint.js';
import { PRESETS } from '../../src/model/weights/random-presets.js';
import { serveModel } from '../serve-model.js';

const tmp = mkdtempSync(join(tmpdir(), 'moeserve-dummy-serve-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('serve --load-format dummy (CPU)', () => {
  it('serves a directory holding only config.json, with the same tokens on every start', async () => {
    writeRandomCheckpoint({ config: PRESETS['tiny']!(), outDir: join(tmp, 'full'), seed: 1 });
    const dir = join(tmp, 'config-only');
    mkdirSync(dir);
    copyFileSync(join(tmp, 'full', 'config.json'), join(dir, 'config.json'));
    const complete = async () => {
      const served = await serveModel(dir, { loadFormat: 'dummy' });
      try {
        const res = await fetch(`${served.url}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'tiny',
            prompt: [5, 6, 7, 8],
            max_tokens: 12,
            temperature: 0,
            ignore_eos: true,
            logprobs: 1,
          }),
        });
        expect(res.status).toBe(200);
        const body = (await res.json()) as {
          choices: { logprobs: { token_logprobs: number[] } }[];
          usage: { completion_tokens: number };
        };
        expect(body.usage.completion_tokens).toBe(12);
        return body.choices[0]!.logprobs.token_logprobs;
      } finally {
        await served.close();
      }
    };
    const first = await complete();
    expect(first.every(Number.isFinite)).toBe(true);
    expect(await complete()).toEqual(first);
  });
});
