import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TraceSummary } from '../src/parallel/allreduce-trace-summary.js';
import { goldenCase } from './golden-dir.js';

const cli = (args: string[]): string =>
  execFileSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });

describe('moeserve forward --allreduce-trace, moeserve trace summarize', () => {
  it('traces every fused call of a --tp 2 job through worker processes', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'moeserve-cli-trace-')), 'trace');
    const common = ['--model', goldenCase('tiny-moe'), '--ids', '1,2,3,4,5', '--tp', '2'];
    const off = cli(['forward', ...common, '--out', '-', '--allreduce-fusion', 'off']);
    const all = ['--allreduce-fusion', 'all', '--allreduce-trace', dir];
    expect(cli(['forward', ...common, '--out', '-', ...all])).toBe(off); // bit-identical logits
    const rank1 = readFileSync(join(dir, 'rank1.jsonl'), 'utf8').trim().split('\n');
    expect(rank1).toHaveLength(4);
    const s = JSON.parse(cli(['trace', 'summarize', dir, '--json'])) as TraceSummary;
    expect(s).toMatchObject({ files: 2, lines: 8, variants: ['exact'], first_exceeding: null });
    expect(s.layers.map((l) => [l.residual_max_diff, l.norm_max_diff])).toEqual(
      Array(4).fill([0, 0]),
    );
    cli([
      'forward',
      ...common,
      '--out',
      '-',
      '--allreduce-fusion',
      'all',
      '--allreduce-trace',
      dir,
      '--allreduce-trace-variant',
      'bf16-vendor',
    ]);
    const text = cli(['trace', 'summarize', dir, '--threshold', '1e-3']);
    expect(text).toMatch(/first layer over threshold 0\.001: 0 \(residual/);
    expect(() => cli(['trace', 'summarize'])).toThrow(/one DIR/);
  });
});
