import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import type { ForwardBatch } from '../../src/backend/forward-batch.js';
import { launchRankGroup } from '../../src/engine/distributed/launch-group.js';
import { M3ModelRunner } from '../../src/engine/m3-model-runner.js';
import type { ModelRunner } from '../../src/engine/model-runner.js';
import { loadModel } from '../../src/model/load-model.js';
import { goldenCase } from '../golden-dir.js';

const DIR = goldenCase('tiny-moe');

/** Two sequences prefilled together, then one decode step each (pages 0–1 and 2–3 of 4). */
function steps(): ForwardBatch[] {
  const pageTables = [Int32Array.from([0, 1]), Int32Array.from([2, 3])];
  return [
    {
      tokenIds: Int32Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
      seqs: [
        { numCached: 0, numNew: 6, pageTable: pageTables[0]! },
        { numCached: 0, numNew: 5, pageTable: pageTables[1]! },
      ],
      pageSize: 4,
      logitsFor: 'last',
      captureRoutedExperts: true,
    },
    {
      tokenIds: Int32Array.from([12, 13]),
      seqs: [
        { numCached: 6, numNew: 1, pageTable: pageTables[0]! },
        { numCached: 5, numNew: 1, pageTable: pageTables[1]! },
      ],
      pageSize: 4,
      logitsFor: 'last',
      captureRoutedExperts: true,
    },
  ];
}

describe('M3ModelRunner over a --tp group (the engine runner of rank 0)', () => {
  it('runs batched prefill and decode steps on worker processes like one rank', async () => {
    const log: string[] = [];
    const driver = await launchRankGroup({
      spec: {
        modelDir: DIR,
        backend: 'cpu',
        comm: 'cpu',
        tp: 2,
        ep: true,
        sp: true,
        allReduceFusion: 'dense',
        fuseSharedExperts: false,
      },
      nnodes: 1,
      nodeRank: 0,
      masterAddr: '127.0.0.1',
      masterPort: 0,
      rendezvousTimeoutMs: 30_000,
      log: (l) => log.push(l),
      workerEntry: { execArgv: ['--import', 'tsx'], entry: 'src/cli/main.ts' },
    });
    const runner: ModelRunner & M3ModelRunner = new M3ModelRunner(driver, { numPages: 4 });
    expect(runner.pageSize).toBe(4);
    expect(runner.maxModelLen).toBe(16);
    const ref = await loadModel(DIR, { backend: new CpuBackend() });
    const refKv = ref.allocKv(4, 4);
    try {
      for (const batch of steps()) {
        const got = await runner.forward(batch);
        const want = await ref.forward(batch, refKv);
        const scale = Math.max(1, ...Array.from(want.logits, Math.abs));
        const err = Math.max(...Array.from(got.logits, (v, i) => Math.abs(v - want.logits[i]!)));
        expect(err / scale).toBeLessThan(1e-5);
        expect(got.routedExperts).toEqual(want.routedExperts);
      }
    } finally {
      await runner.close();
    }
    expect(log.join('\n')).toMatch(/ranks ready: rank 0 pid \d+, rank 1 pid \d+/);
  });
});
