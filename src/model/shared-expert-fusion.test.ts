import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { goldenCase } from '../../test/golden-dir.js';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
import { loadModel } from './load-model.js';
import { badFusionRows } from './fusion-capture.js';
import { prefillBatch, singleSequenceCache } from './run-forward.js';

// Seed 002's bug class: with fusion on the gate must be asked for the K routed experts only
// and the shared slot appended once, so every captured row holds K distinct routed ids < E
// and exactly one shared id E.
describe('shared-experts fusion capture', () => {
  it('captures K distinct routed ids below E plus exactly one shared id', async () => {
    const dir = goldenCase('tiny-moe');
    const ids = (JSON.parse(readFileSync(`${dir}/expect.json`, 'utf8')) as { ids: number[] }).ids;
    const model = await loadModel(dir, { backend: new CpuBackend(), fuseSharedExperts: true });
    const { numExperts: E, numExpertsPerTok: K } = model.cfg;
    const { kv, pageTable } = singleSequenceCache(model, ids.length);
    const out = await model.forward(prefillBatch(ids, pageTable, kv.pageSize, 'last', true), kv);
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
    expect(badFusionRows(out.routedExperts, ids.length, K, E)).toBe(0);
    // The seed's AITER bug: the gate spent a routed column on the shared id, which the append
    // then wrote again (K-1 routed experts, shared weighted twice). The rule must catch it.
    const corrupted = Object.fromEntries(
      Object.entries(out.routedExperts).map(([l, rows]) => {
        const c = rows.slice();
        c[0] = E; // token 0: routed column 0 overwritten by the shared id
        return [l, c];
      }),
    );
    expect(badFusionRows(corrupted, ids.length, K, E)).toBe(layers.length);
  });
});
