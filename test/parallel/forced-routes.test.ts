import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cpuForwardForcing, type RoutedForward } from '../gpu/forced-routes.js';
import { GOLDEN_DIR } from '../golden-dir.js';

// The group check's CPU reference (test/gpu/group-check.ts), on the CPU alone: a "GPU" forward
// that is the CPU's own with route rows changed.
const CASE = join(GOLDEN_DIR, 'tiny-moe');
const { ids } = JSON.parse(readFileSync(join(CASE, 'expect.json'), 'utf8')) as { ids: number[] };

const rel = (a: number[], b: number[]): number => {
  let n = 0;
  let d = 0;
  b.forEach((x, i) => {
    n += (a[i]! - x) ** 2;
    d += x * x;
  });
  return Math.sqrt(n / d);
};

/** `base` with route row (layer, token) replaced by `row`. */
function withRoute(
  base: RoutedForward,
  layer: string,
  token: number,
  row: number[],
): RoutedForward {
  const routed = structuredClone(base.routed_experts);
  routed[layer]![token] = row;
  return { logits: base.logits, routed_experts: routed };
}

describe('cpuForwardForcing', () => {
  it('changes nothing when the routes agree', async () => {
    const plain = (await cpuForwardForcing(CASE, ids, { logits: [], routed_experts: {} }, false))
      .ref;
    const { ref, flips } = await cpuForwardForcing(CASE, ids, plain);
    expect(flips).toEqual([]);
    expect(ref.logits).toEqual(plain.logits);
  });

  it('forces a near-tied flip (layer 1 token 16: gap 1.2e-3); it moves that position and later ones only', async () => {
    const plain = (await cpuForwardForcing(CASE, ids, { logits: [], routed_experts: {} }, false))
      .ref;
    const row = plain.routed_experts['1']![16]!;
    // A "GPU" that took the CPU's third choice at that row instead of its second, and whose
    // later layers followed from it: the CPU forward with that one row forced.
    const third = await thirdExpert(plain, '1', 16);
    const gpu = (await cpuForwardForcing(CASE, ids, withRoute(plain, '1', 16, [row[0]!, third])))
      .ref;
    expect([...gpu.routed_experts['1']![16]!].sort()).toEqual([row[0]!, third].sort());
    const { ref, flips } = await cpuForwardForcing(CASE, ids, gpu);
    expect(flips).toHaveLength(1);
    expect(flips[0]).toMatchObject({ layer: '1', token: 16, forced: true });
    expect(flips[0]!.gap).toBeGreaterThan(0);
    expect(flips[0]!.gap).toBeLessThan(2e-3);
    expect(ref.logits).toEqual(gpu.logits);
    for (let t = 0; t < 16; t++) expect(ref.logits[t]).toEqual(plain.logits[t]);
    expect(rel(ref.logits[16]!, plain.logits[16]!)).toBeGreaterThan(1e-3);
  });

  it('does not force a flip beyond a near-tie', async () => {
    const plain = (await cpuForwardForcing(CASE, ids, { logits: [], routed_experts: {} }, false))
      .ref;
    const row = plain.routed_experts['2']![5]!; // margin 5.5e-2 to the third
    const other = [0, 1, 2, 3, 4, 5, 6, 7].find((e) => !row.includes(e))!;
    const far = withRoute(plain, '2', 5, [row[0]!, other]);
    const { ref, flips } = await cpuForwardForcing(CASE, ids, far);
    expect(flips.filter((f) => !f.forced)).toHaveLength(1);
    expect(ref.logits).toEqual(plain.logits);
  });
});

/** The expert the CPU ranks third at one row (from a forcing run that records its scores). */
async function thirdExpert(plain: RoutedForward, layer: string, token: number): Promise<number> {
  // Try every unchosen expert as the second pick: the third-ranked one has the smallest gap.
  const row = plain.routed_experts[layer]![token]!;
  let best = { e: -1, gap: Infinity };
  for (let e = 0; e < 8; e++) {
    if (row.includes(e)) continue;
    const { flips } = await cpuForwardForcing(
      CASE,
      ids,
      withRoute(plain, layer, token, [row[0]!, e]),
    );
    const f = flips.find((x) => x.layer === layer && x.token === token)!;
    // gap = CPU's K-th score minus the lowest of {row[0], e}: the smallest belongs to the third.
    if (f.gap < best.gap) best = { e, gap: f.gap };
  }
  return best.e;
}
