import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { GOLDEN_CASES, goldenCase } from '../../test/golden-dir.js';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
import type { GoldenExpect } from './golden-compare.js';
import { loadModel } from './load-model.js';
import { runForward } from './run-forward.js';

/** The CPU backend as one without MoeOptions.shared: the model runs the shared MLP itself. */
class SeparateSharedCpu extends CpuBackend {
  override moeTakesShared(): boolean {
    return false;
  }
}

const backends: CpuBackend[] = [];
afterAll(() => backends.forEach((b) => b.close()));

// The shared expert's GEMMs in the routed experts' pool jobs (CpuBackend.moe with
// MoeOptions.shared) must not change a bit: the CPU is the reference. tiny-mxfp8's FP8
// shared expert stays the model's own MLP (moeTakesShared: W8A8 may apply to its matmuls).
describe('shared expert inside the CPU MoE', () => {
  for (const name of GOLDEN_CASES) {
    it(`${name}: the logits of the separate shared MLP, bit for bit, at 1 and 2 threads`, async () => {
      const dir = goldenCase(name);
      const exp = JSON.parse(readFileSync(`${dir}/expect.json`, 'utf8')) as GoldenExpect;
      for (const threads of [1, 2]) {
        const o = { threads, minParallelFlops: 0 };
        const [inside, separate] = [new CpuBackend(o), new SeparateSharedCpu(o)];
        backends.push(inside, separate);
        const [a, b] = await Promise.all(
          [inside, separate].map(async (be) =>
            runForward(await loadModel(dir, { backend: be }), exp.ids),
          ),
        );
        expect(a!.logits).toEqual(b!.logits);
        expect(a!.routedExperts).toEqual(b!.routedExperts);
      }
    });
  }
});
