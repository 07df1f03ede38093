import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { compareGolden, type GoldenExpect } from '../../src/model/golden-compare.js';
import type { ForwardResult } from '../../src/model/run-forward.js';
import { GOLDEN_CASES, goldenCase } from '../golden-dir.js';
import {
  forwardOnRanks,
  forwardSingle,
  layoutName,
  relativeLogitError,
  writeDeepRandomCheckpoint,
  type LayoutCase,
} from './rank-harness.js';

/** float32 tolerance between layouts: max |Δlogit| / max(1, max |logit|). */
const TOLERANCE = 1e-5;

const LAYOUTS: LayoutCase[] = [
  { tp: 2 },
  { tp: 4 },
  { tp: 2, ep: true },
  { tp: 4, ep: true },
  { tp: 2, sp: true },
  { tp: 4, sp: true },
  { tp: 2, ep: true, sp: true },
  { tp: 4, ep: true, sp: true },
  { tp: 2, fusion: 'all' },
  { tp: 4, ep: true, fusion: 'all' },
];

async function expectSameAsSingle(
  dir: string,
  ids: readonly number[],
  c: LayoutCase,
  ref: ForwardResult,
): Promise<void> {
  const { results } = await forwardOnRanks(dir, c, ids);
  const err = relativeLogitError(results[0]!, ref);
  expect(err, `${layoutName(c)} relative logit error`).toBeLessThan(TOLERANCE);
  expect(results[0]!.routedExperts).toEqual(ref.routedExperts);
  // Every rank ends the step with the same logits (the LM head all-gather).
  for (const r of results.slice(1)) expect(r.logits).toEqual(results[0]!.logits);
}

describe('every parallel layout gives the single-rank logits and routes (golden checkpoints)', () => {
  for (const name of GOLDEN_CASES) {
    const dir = goldenCase(name);
    const exp = JSON.parse(readFileSync(`${dir}/expect.json`, 'utf8')) as GoldenExpect;
    let ref: ForwardResult;
    beforeAll(async () => {
      ref = await forwardSingle(dir, exp.ids);
    });
    for (const c of LAYOUTS) {
      it(`${name} ${layoutName(c)}`, async () => {
        await expectSameAsSingle(dir, exp.ids, c, ref);
        const { results } = await forwardOnRanks(dir, c, exp.ids);
        const report = compareGolden(exp, results[0]!);
        expect(report.problems).toEqual([]);
      });
    }
  }

  it('tiny-moe tp4 with shared-experts fusion (TP only; rejected with --ep)', async () => {
    const dir = goldenCase('tiny-moe');
    const exp = JSON.parse(readFileSync(`${dir}/expect.json`, 'utf8')) as GoldenExpect;
    const ref = await forwardSingle(dir, exp.ids, true);
    await expectSameAsSingle(dir, exp.ids, { tp: 4, fuseSharedExperts: true }, ref);
    await expect(
      forwardOnRanks(dir, { tp: 2, ep: true, fuseSharedExperts: true }, exp.ids),
    ).rejects.toThrow(/not supported with expert parallelism/);
  });
});

describe('every parallel layout on a deeper random checkpoint', () => {
  let dir: string;
  let ref: ForwardResult;
  const ids = Array.from({ length: 21 }, (_, i) => (i * 37 + 11) % 256);
  beforeAll(async () => {
    dir = writeDeepRandomCheckpoint();
    ref = await forwardSingle(dir, ids);
  });
  for (const c of LAYOUTS) {
    it(layoutName(c), async () => {
      await expectSameAsSingle(dir, ids, c, ref);
    });
  }

  it('deferred FFN reductions are bit-identical to immediate ones (seed 000 definition)', async () => {
    // One group at a time: each rank's float32 arithmetic is then the same in every run.
    const off = await forwardOnRanks(dir, { tp: 2, fusion: 'off' }, ids);
    for (const fusion of ['dense', 'all'] as const) {
      const r = await forwardOnRanks(dir, { tp: 2, fusion }, ids);
      expect(r.results[0]!.logits).toEqual(off.results[0]!.logits);
    }
  });
});
