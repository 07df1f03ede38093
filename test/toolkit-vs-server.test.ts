import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { goldenCase } from './golden-dir.js';
import { serveModel } from './serve-model.js';

// The bench/eval toolkit against moeserve's own server (real engine, CPU, golden tiny-moe,
// which has no EOS id: every request must run to max_tokens, so the counts are exact).
const run = promisify(execFile);
const cli = (args: string[]) =>
  run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { encoding: 'utf8' });

describe('toolkit against moeserve serve', () => {
  let url = '';
  let close: () => Promise<void> = async () => {};
  const out = mkdtempSync(join(tmpdir(), 'moeserve-toolkit-'));

  beforeAll(async () => {
    const served = await serveModel(goldenCase('tiny-moe'), { maxModelLen: 512, numPages: 256 });
    url = served.url;
    close = served.close;
  });
  afterAll(() => close());

  it('bench serve completes every request and counts every token', async () => {
    const file = join(out, 'bench.jsonl');
    const args = [
      'bench',
      'serve',
      '--base-url',
      url,
      '--backend',
      'openai-chat',
      '--dataset-name',
      'random-words',
    ];
    args.push('--random-input-len', '12', '--random-output-len', '6', '--random-range-ratio', '1');
    args.push(
      '--num-prompts',
      '6',
      '--max-concurrency',
      '3',
      '--ignore-eos',
      '--output-file',
      file,
    );
    await cli(args);
    const res = JSON.parse(readFileSync(file, 'utf8').trim().split('\n')[0]!) as Record<
      string,
      number
    >;
    expect(res['completed']).toBe(6);
    expect(res['total_output_tokens']).toBe(36);
    expect(res['output_throughput']).toBeGreaterThan(0);
    expect(res['median_tpot_ms']).toBeGreaterThan(0);
  });

  it('eval stop-rate tallies finish reasons exactly (no EOS: every request is a runaway)', async () => {
    const file = join(out, 'stop.jsonl');
    const args = ['eval', 'stop-rate', '--base-url', url, '--num-examples', '3'];
    await cli([...args, '--max-tokens', '5', '--concurrency', '3', '--output', file]);
    const summary = JSON.parse(readFileSync(`${file}.summary.json`, 'utf8')) as Record<
      string,
      unknown
    >;
    expect(summary).toMatchObject({
      n_total: 3,
      n_ok: 3,
      n_err: 0,
      finish_counts: { length: 3 },
      stop_rate_pct: 0,
      runaway_rate_pct: 100,
      ct_max: 5,
    });
  });
});
