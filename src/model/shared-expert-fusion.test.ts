import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { goldenCase } from '../../test/golden-dir.js';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
import type { ForwardBatch } from '../backend/forward-batch.js';
import { loadModel } from './load-model.js';
import { singleSequenceCache } from './run-forward.js';

// Seed 002's bug class: with fusion on the gate must be asked for the K routed experts only
// and the shared slot appended once, so every captured row holds K distinct routed ids < E
// and exactly one shared id E.
describe('shared-experts fusion capture', () => {
  it('captures K distinct routed ids below E plus exactly one shared id', async () => {
    const dir = goldenCase('tiny-moe');
    const ids = (JSON.parse(readFileSync(`${dir}/expect.json`, 'utf8')) as { ids: number[] }).ids;
    const model = loadModel(dir, { backend: new CpuBackend(), fuseSharedExperts: true });
    const { numExperts: E, numExpertsPerTok: K } = model.cfg;
    const { kv, pageTable } = singleSequenceCache(model, ids.length);
    const batch: ForwardBatch = {
      tokenIds: Int32Array.from(ids),
      seqs: [{ numCached: 0, numNew: ids.length, pageTable }],
      pageSize: kv.pageSize,
      logitsFor: 'last',
      captureRoutedExperts: true,
    };
    const out = await model.forward(batch, kv);
    const layers = Object.values(out.routedExperts);
    expect(layers.length).toBe(model.cfg.moeLayers.filter(Boolean).length);
    for (const rows of layers) {
      expect(rows.length).toBe(ids.length * (K + 1));
      for (let t = 0; t < ids.length; t++) {
        const row = Array.from(rows.subarray(t * (K + 1), (t + 1) * (K + 1)));
        const routed = row.filter((e) => e < E);
        expect(new Set(routed).size).toBe(K);
        expect(row.filter((e) => e === E)).toHaveLength(1);
        expect(row[K]).toBe(E);
      }
    }
  });
});
