import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { goldenCase } from '../../test/golden-dir.js';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
import type { ForwardBatch } from '../backend/forward-batch.js';
import { loadModel } from './load-model.js';
import { MiniMaxM3Model } from './minimax-m3/minimax-m3-model.js';
import { prefillBatch, runForward, singleSequenceCache } from './run-forward.js';

const dir = goldenCase('tiny-moe');
const ids = (JSON.parse(readFileSync(`${dir}/expect.json`, 'utf8')) as { ids: number[] }).ids;

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** Runs `ids` through the cache in the given chunk sizes and returns the logits of every position. */
async function chunked(model: MiniMaxM3Model, chunks: number[]): Promise<number[][]> {
  const { kv, pageTable } = singleSequenceCache(model, ids.length);
  const rows: number[][] = [];
  let pos = 0;
  for (const n of chunks) {
    const batch: ForwardBatch = {
      tokenIds: Int32Array.from(ids.slice(pos, pos + n)),
      seqs: [{ numCached: pos, numNew: n, pageTable }],
      pageSize: kv.pageSize,
      logitsFor: 'all',
    };
    const out = await model.forward(batch, kv);
    const V = model.cfg.vocabSize;
    for (let r = 0; r < n; r++) rows.push(Array.from(out.logits.subarray(r * V, (r + 1) * V)));
    pos += n;
  }
  return rows;
}

const model = await loadModel(dir, { backend: new CpuBackend() });
const sparse = await loadModel(dir, { backend: new CpuBackend() });

describe('KV cache', () => {
  it('token-by-token decode gives the logits of one full prefill (MSA layers included)', async () => {
    const full = (await runForward(model, ids)).logits;
    const stepwise = await chunked(model, [5, ...new Array<number>(ids.length - 5).fill(1)]);
    expect(stepwise).toHaveLength(ids.length);
    stepwise.forEach((row, t) => expect(maxDiff(row, full[t]!)).toBeLessThan(1e-5));
  });

  it('chunked prefill across page boundaries gives the same logits', async () => {
    const full = (await runForward(model, ids)).logits;
    const parts = await chunked(model, [7, 6, 11]);
    parts.forEach((row, t) => expect(maxDiff(row, full[t]!)).toBeLessThan(1e-5));
  });

  it('a scattered page table gives the same logits as contiguous pages', async () => {
    const full = (await runForward(model, ids)).logits;
    const { kv } = singleSequenceCache(model, ids.length * 3);
    const pageTable = Int32Array.from([13, 2, 9, 0, 16, 5]);
    const out = await model.forward(prefillBatch(ids, pageTable, kv.pageSize, 'all'), kv);
    expect(maxDiff(out.logits, full.flat())).toBeLessThan(1e-5);
  });
});

describe('MSA sparse attention', () => {
  const cfg = sparse.cfg;
  const dense = new MiniMaxM3Model(
    { ...cfg, sparseLayers: cfg.sparseLayers.map(() => false) },
    sparse.weights,
    sparse.backend,
    sparse.comm,
  );
  const fits = cfg.sparse!.topkBlocks * cfg.sparse!.blockSize;

  it('equals dense attention while the context fits in the top-k blocks', async () => {
    const a = await runForward(sparse, ids.slice(0, fits));
    const b = await runForward(dense, ids.slice(0, fits));
    expect(maxDiff(a.logits.flat(), b.logits.flat())).toBeLessThan(1e-6);
  });

  it('differs from dense attention once blocks are dropped', async () => {
    const a = await runForward(sparse, ids);
    const b = await runForward(dense, ids);
    expect(maxDiff(a.logits[fits - 1]!, b.logits[fits - 1]!)).toBeLessThan(1e-6);
    expect(maxDiff(a.logits.slice(fits).flat(), b.logits.slice(fits).flat())).toBeGreaterThan(1e-3);
  });
});
