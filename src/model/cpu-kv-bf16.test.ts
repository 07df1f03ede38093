import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { GOLDEN_CASES, goldenCase } from '../../test/golden-dir.js';
import { CpuBackend, type CpuBackendOptions } from '../backend/cpu/cpu-backend.js';
import { compareGolden, type GoldenExpect } from './golden-compare.js';
import { loadModel } from './load-model.js';
import { runForward } from './run-forward.js';

const backends: CpuBackend[] = [];
const backend = (o: CpuBackendOptions): CpuBackend => {
  const b = new CpuBackend(o);
  backends.push(b);
  return b;
};
afterAll(() => backends.forEach((b) => b.close()));

describe("CpuBackend kvCacheDtype 'bf16'", () => {
  // bf16 keeps 8 significant bits: around 1 its step is 2^-7
  const values = [1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, -3.14159, 0.1];
  const rounded = [1, 1 + 2 ** -6, 1 + 2 ** -7, -3.140625, 0.10009765625];

  it.each([
    ['bf16', rounded],
    ['f32', values.map((x) => Math.fround(x))],
  ] as const)('writeCache stores %s values (nearest even)', (dtype, want) => {
    const b = backend({ kvCacheDtype: dtype });
    const cache = b.alloc([2, 2, 5], 'bf16');
    const x = b.upload(Float32Array.from(values), [1, 5], 'f32');
    const meta = b.prepareBatch({
      tokenIds: new Int32Array(1),
      seqs: [{ numCached: 2, numNew: 1, pageTable: Int32Array.of(1, 0) }],
      pageSize: 2,
      logitsFor: 'last',
    });
    b.writeCache(cache, x, meta);
    // position 2: page 0 (the table's second), slot 0 → rows 0..4 of the block
    expect(Array.from(b.readF32(cache).subarray(0, 5))).toEqual(want);
  });

  for (const name of GOLDEN_CASES) {
    // Measured: max |Δlogit| 8.3e-3 (tiny-dense) to 2.0e-2 (tiny-mxfp8) against the golden
    // rule's 6.9e-3 to 8.0e-3: outside it, so the reference keeps float32 caches by default.
    it(`${name}: logits identical at 1 and 2 threads, within 0.03 of the golden ones`, async () => {
      const dir = goldenCase(name);
      const exp = JSON.parse(readFileSync(`${dir}/expect.json`, 'utf8')) as GoldenExpect;
      const run = async (o: CpuBackendOptions) =>
        runForward(await loadModel(dir, { backend: backend(o) }), exp.ids);
      const [one, two, ref] = await Promise.all([
        run({ threads: 1, kvCacheDtype: 'bf16' }),
        run({ threads: 2, minParallelFlops: 0, kvCacheDtype: 'bf16' }),
        run({ threads: 1 }),
      ]);
      expect(two!.logits).toEqual(one!.logits);
      expect(one!.logits).not.toEqual(ref!.logits);
      const report = compareGolden(exp, one!);
      expect(report.maxAbsDiff).toBeGreaterThan(0);
      expect(report.maxAbsDiff).toBeLessThan(0.03);
    });
  }
});
