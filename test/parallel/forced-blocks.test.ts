import { describe, expect, it } from 'vitest';
import { forceBlocks, type HeadSelection } from '../gpu/forced-blocks.js';

// One index head, 2-dim index vectors, blocks of one key, top-2 with the local block kept.
const O = { numIndexHeads: 1, indexDim: 2, topk: 2, initBlocks: 0, localBlocks: 1 };
const q = new Float32Array([1, 0, 1, 0, 1, 0, 1, 0]); // [T, D]
const cpuK = new Float32Array([0.5, 0, 0.49, 0, 0, 0, 0, 0]); // keys 0..3
/** The CPU's choice: rows 0..2 take every block, row 3 block 0 (0.5) and its local block 3. */
const cpuIds = (): Int32Array => new Int32Array([0, -1, 0, 1, 0, 1, 0, 3]);

function gpu(k: number[], row3: [number, number]): HeadSelection[] {
  return [{ ids: new Int32Array([0, -1, 0, 1, 0, 1, ...row3]), q, k: new Float32Array(k) }];
}

describe('forceBlocks', () => {
  it('forces a flip within the two backends score error, and only that row', () => {
    // The GPU's key 1 scores 0.51 (its inputs differ by 0.02): block 1 beat block 0 there.
    const sel = cpuIds();
    const flips = forceBlocks(sel, q, cpuK, gpu([0.5, 0, 0.51, 0, 0, 0, 0, 0], [1, 3]), O, 1, 0);
    expect(flips).toHaveLength(1);
    expect(flips[0]).toMatchObject({ head: 0, token: 3, forced: true });
    expect(flips[0]!.gap).toBeCloseTo(0.01, 6);
    expect(flips[0]!.err).toBeCloseTo(0.02, 6);
    expect([...sel]).toEqual([0, -1, 0, 1, 0, 1, 1, 3]);
  });

  it('leaves a flip the inputs do not explain, and counts it', () => {
    // Same inputs on both sides (no error), but the GPU took block 2 (score 0): a wrong pick.
    const sel = cpuIds();
    const flips = forceBlocks(sel, q, cpuK, gpu([...cpuK], [2, 3]), O, 1, 0);
    expect(flips).toHaveLength(1);
    expect(flips[0]).toMatchObject({ token: 3, forced: false, err: 0 });
    expect(flips[0]!.gap).toBeCloseTo(0.5, 6);
    expect([...sel]).toEqual([...cpuIds()]);
  });

  it('never forces a row whose always-kept blocks differ', () => {
    const sel = cpuIds();
    const flips = forceBlocks(sel, q, cpuK, gpu([0.5, 0, 0.51, 0, 0, 0, 0, 0], [0, 1]), O, 1, 0);
    expect(flips[0]).toMatchObject({ token: 3, forced: false });
    expect([...sel]).toEqual([...cpuIds()]);
  });

  it('agrees with the CPU on every row it was given unchanged', () => {
    const sel = cpuIds();
    expect(forceBlocks(sel, q, cpuK, gpu([...cpuK], [0, 3]), O, 1, 0)).toEqual([]);
  });
});
