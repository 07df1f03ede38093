import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compareGolden, type GoldenExpect } from '../src/model/golden-compare.js';
import { GOLDEN_CASES, goldenCase } from './golden-dir.js';

const cli = (args: string[]): string =>
  execFileSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });

describe('moeserve forward reproduces every golden case', () => {
  const out = mkdtempSync(join(tmpdir(), 'moeserve-fwd-'));
  for (const name of GOLDEN_CASES) {
    for (const fused of [false, true]) {
      it(`${name}${fused ? ' with shared-experts fusion' : ''}`, () => {
        const dir = goldenCase(name);
        const exp = JSON.parse(readFileSync(join(dir, 'expect.json'), 'utf8')) as GoldenExpect;
        const file = join(out, `${name}-${fused}.json`);
        cli([
          'forward',
          '--model',
          dir,
          '--ids',
          exp.ids.join(','),
          '--out',
          file,
          ...(fused ? ['--fuse-shared-experts'] : []),
        ]);
        const got = JSON.parse(readFileSync(file, 'utf8')) as {
          logits: number[][];
          routed_experts: Record<string, number[][]>;
        };
        const report = compareGolden(exp, {
          logits: got.logits,
          routedExperts: got.routed_experts,
        });
        expect(report.problems).toEqual([]);
      });
    }
  }

  it('names the file and tensor of a checkpoint with a missing tensor', () => {
    expect(() =>
      cli(['forward', '--model', '/nonexistent-dir', '--ids', '1', '--out', '-']),
    ).toThrow(/nonexistent-dir/);
  });

  it('rejects token ids outside the vocabulary', () => {
    expect(() =>
      cli(['forward', '--model', goldenCase('tiny-dense'), '--ids', '1,999', '--out', '-']),
    ).toThrow(/vocabulary/);
  });
});

describe('moeserve forward --out -', () => {
  it('stops quietly when the reader closes the pipe early (| head)', () => {
    const dir = goldenCase('tiny-moe');
    const exp = JSON.parse(readFileSync(join(dir, 'expect.json'), 'utf8')) as GoldenExpect;
    const node = `${JSON.stringify(process.execPath)} --import tsx src/cli/main.ts`;
    const cmd = `${node} forward --model ${dir} --ids ${exp.ids.join(',')} --out - 2>"$E" | head -c 20 >/dev/null; echo "\${PIPESTATUS[0]}"; cat "$E"`;
    const err = join(mkdtempSync(join(tmpdir(), 'moeserve-epipe-')), 'stderr');
    const res = spawnSync('bash', ['-c', cmd], {
      encoding: 'utf8',
      env: { ...process.env, E: err },
    });
    const [rc, ...stderr] = res.stdout.trim().split('\n');
    expect(stderr.join('\n')).not.toMatch(/EPIPE|Error/);
    expect(rc).toBe('0');
  });
});
