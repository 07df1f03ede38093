import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../src/backend/cpu/cpu-backend.js';
import { loadModel } from '../src/model/load-model.js';
import { runForward } from '../src/model/run-forward.js';
import { goldenCase } from './golden-dir.js';

const args = (a: string[]) => ['--import', 'tsx', 'src/cli/main.ts', ...a];

describe('--kv-cache-dtype on the CLI', () => {
  it('serve, generate and forward list it with its default', () => {
    for (const cmd of ['serve', 'generate', 'forward']) {
      const help = execFileSync(process.execPath, args([cmd, '--help']), { encoding: 'utf8' });
      expect(help, cmd).toMatch(/--kv-cache-dtype auto\|bf16\|fp8\|fp8_e4m3 .*\(default: auto\)/);
    }
  });

  it('refuses an unknown value with a usage error', () => {
    const r = spawnSync(
      process.execPath,
      args([
        'forward',
        '--model',
        goldenCase('tiny-moe'),
        '--ids',
        '1',
        '--out',
        '-',
        '--kv-cache-dtype',
        'fp9',
      ]),
      {
        encoding: 'utf8',
      },
    );
    expect(r.stderr).toContain('--kv-cache-dtype must be one of auto, bf16, fp8, fp8_e4m3');
    expect(r.status).not.toBe(0);
  });

  it('forward --kv-cache-dtype fp8 gives the FP8-cache model logits (CPU)', async () => {
    const dir = goldenCase('tiny-moe');
    const ids = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3];
    const file = join(mkdtempSync(join(tmpdir(), 'kvfp8-cli-')), 'out.json');
    execFileSync(
      process.execPath,
      args([
        'forward',
        '--model',
        dir,
        '--ids',
        ids.join(','),
        '--out',
        file,
        '--kv-cache-dtype',
        'fp8',
      ]),
      { stdio: 'ignore' },
    );
    const got = (JSON.parse(readFileSync(file, 'utf8')) as { logits: number[][] }).logits;
    const fp8 = await loadModel(dir, { backend: new CpuBackend(), kvCacheDtype: 'fp8_e4m3' });
    const bf16 = await loadModel(dir, { backend: new CpuBackend() });
    expect(got).toEqual((await runForward(fp8, ids)).logits);
    expect(got).not.toEqual((await runForward(bf16, ids)).logits);
  });

  it.each([
    ['bf16', 'bf16'],
    ['auto', 'f32'],
  ] as const)(
    'forward --kv-cache-dtype %s on the CPU gives the logits of %s caches',
    async (flag, stored) => {
      const dir = goldenCase('tiny-moe');
      const ids = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3];
      const file = join(mkdtempSync(join(tmpdir(), 'kvbf16-cli-')), 'out.json');
      // prettier-ignore
      execFileSync(process.execPath, args(['forward', '--model', dir, '--ids', ids.join(','),
        '--out', file, '--kv-cache-dtype', flag, '--cpu-threads', '1']), { stdio: 'ignore' });
      const got = (JSON.parse(readFileSync(file, 'utf8')) as { logits: number[][] }).logits;
      const run = async (kvCacheDtype: 'f32' | 'bf16') =>
        (await runForward(await loadModel(dir, { backend: new CpuBackend({ kvCacheDtype }) }), ids))
          .logits;
      expect(got).toEqual(await run(stored));
      expect(got).not.toEqual(await run(stored === 'bf16' ? 'f32' : 'bf16'));
    },
  );
});
