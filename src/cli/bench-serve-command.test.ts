import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ScriptedServer } from '../bench/scripted-server.js';
import { benchServeCommand } from './bench-serve-command.js';
import { helpText, runCommand } from './command.js';

let server: ScriptedServer;
beforeAll(async () => {
  server = await ScriptedServer.start(() => ({ ttftMs: 10, itlMs: 2, numTokens: 6 }));
});
afterAll(() => server.close());

describe('moeserve bench serve', () => {
  it('states the range-ratio and TTFT conventions and their defaults in --help', () => {
    const help = helpText(benchServeCommand);
    expect(help).toMatch(/--range-ratio-convention .*sglang: lengths uniform.*\(default: sglang\)/);
    expect(help).toMatch(/--ttft-convention .*\(default: sglang\)/);
    expect(help).toContain('--max-concurrency N[,N...]');
  });

  it('asks for the tokenizer when the random dataset cannot find one', async () => {
    await expect(
      runCommand(benchServeCommand, ['--base-url', server.url, '--num-prompts', '1']),
    ).rejects.toThrow('pass --tokenizer DIR|tokenizer.json for "scripted"');
  });

  it('sweeps concurrencies and appends one §2.3 JSON line per run', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'bench-')), 'runs.jsonl');
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    const rc = await runCommand(benchServeCommand, [
      ...['--base-url', server.url, '--dataset-name', 'random-words', '--num-prompts', '6'],
      ...['--random-input-len', '12', '--random-output-len', '6', '--random-range-ratio', '1'],
      ...['--max-concurrency', '1,3', '--num-runs', '2', '--output-file', out, '--tag', 't1'],
    ]);
    const printed = log.mock.calls.map((c) => String(c[0])).join('\n');
    log.mockRestore();
    err.mockRestore();
    expect(rc).toBe(0);
    const lines = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l['max_concurrency'], l['run_index']])).toEqual([
      [1, 0],
      [1, 1],
      [3, 0],
      [3, 1],
    ]);
    const first = lines[0] as Record<string, unknown>;
    expect(first['model']).toBe('scripted');
    expect(first['completed']).toBe(6);
    expect(first['total_input_tokens']).toBe(72);
    expect(first['total_output_tokens']).toBe(36);
    expect(first['request_rate']).toBe('inf');
    expect(first['tag']).toBe('t1');
    for (const k of [
      'mean_ttft_ms',
      'p99_tpot_ms',
      'median_itl_ms',
      'std_e2e_latency_ms',
      'concurrency',
    ])
      expect(typeof first[k]).toBe('number');
    expect(printed).toContain('Serving Benchmark Result');
    expect(printed).toContain('Sweep summary');
  });
});
