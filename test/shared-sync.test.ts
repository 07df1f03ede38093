import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { BUNDLED_GOLDEN_DIR, GOLDEN_CASES, SHARED_DIR, SHARED_GOLDEN_DIR } from './golden-dir.js';
import { BUNDLED_GSM8K_DIR } from '../src/eval/gsm8k-dataset.js';

/** Every file under `dir`, as paths relative to it, sorted. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

describe('bundled golden fixtures', () => {
  it('hold every case with config, weights and expected output', () => {
    const files = filesUnder(BUNDLED_GOLDEN_DIR);
    expect(files).toContain('README.md');
    for (const c of GOLDEN_CASES) {
      expect(files).toContain(`${c}/config.json`);
      expect(files).toContain(`${c}/expect.json`);
      expect(files.some((f) => f.startsWith(`${c}/`) && f.endsWith('.safetensors'))).toBe(true);
    }
  });

  // The fixtures are a copy of ../shared/golden; when that folder is checked out beside the
  // repository (developer machines, CI with the shared checkout), the copy must equal it byte for
  // byte, so every golden test run on the fixtures is the same check as on the shared folder.
  it('equal ../shared/golden byte for byte when it is checked out', (ctx) => {
    if (!SHARED_GOLDEN_DIR) return ctx.skip('../shared/golden is not checked out beside the repo');
    const shared = filesUnder(SHARED_GOLDEN_DIR);
    expect(filesUnder(BUNDLED_GOLDEN_DIR)).toEqual(shared);
    for (const f of shared) {
      const a = readFileSync(join(BUNDLED_GOLDEN_DIR, f));
      const b = readFileSync(join(SHARED_GOLDEN_DIR, f));
      expect(a.equals(b), `${f} differs from ../shared/golden/${f}`).toBe(true);
    }
  });
});

describe('bundled GSM8K data', () => {
  const shared = SHARED_DIR ? join(SHARED_DIR, 'data/gsm8k') : '';

  it('holds the test split, the few-shot split and the MIT license', () => {
    expect(filesUnder(BUNDLED_GSM8K_DIR)).toEqual([
      'LICENSE',
      'README.md',
      'test.jsonl',
      'train-first200.jsonl',
    ]);
    expect(readFileSync(join(BUNDLED_GSM8K_DIR, 'LICENSE'), 'utf8')).toContain('MIT License');
  });

  it('equals ../shared/data/gsm8k byte for byte when it is checked out', (ctx) => {
    if (!shared || !existsSync(shared))
      return ctx.skip('../shared/data/gsm8k is not checked out beside the repo');
    for (const f of filesUnder(shared)) {
      const a = readFileSync(join(BUNDLED_GSM8K_DIR, f));
      expect(a.equals(readFileSync(join(shared, f))), `${f} differs`).toBe(true);
    }
  });
});
