import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GOLDEN_CASES, goldenCase } from '../../test/golden-dir.js';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
import { compareGolden, type GoldenExpect } from './golden-compare.js';
import { loadModel } from './load-model.js';
import { runForward } from './run-forward.js';

describe('CPU forward matches the float64 reference', () => {
  for (const name of GOLDEN_CASES) {
    it(name, async () => {
      const dir = goldenCase(name);
      const exp = JSON.parse(readFileSync(`${dir}/expect.json`, 'utf8')) as GoldenExpect;
      const model = await loadModel(dir, { backend: new CpuBackend() });
      const got = await runForward(model, exp.ids);
      const report = compareGolden(exp, got);
      expect(report.problems).toEqual([]);
      expect(report.maxAbsDiff).toBeLessThan(1e-4);
    });
  }
});
