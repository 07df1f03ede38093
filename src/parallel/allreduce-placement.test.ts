import { describe, expect, it } from 'vitest';
import { loadModelConfig } from '../config/model-config.js';
import { goldenCase } from '../../test/golden-dir.js';
import {
  formatPlacementTable,
  parseAllReduceFusion,
  planAllReducePlacement,
} from './allreduce-placement.js';
import { combineInRankOrder, planDispatch } from './expert-dispatch.js';
import { tokenShard } from './parallel-layout.js';

const cfg = loadModelConfig(goldenCase('tiny-moe')); // layer 0 dense, layers 1–3 MoE
const reductions = (p: ReturnType<typeof planAllReducePlacement>): string[] =>
  p.map((l) => l.reduction);

describe('all-reduce placement (seed 000)', () => {
  it('defers dense layers and reduces sparse-MoE layers immediately by default', () => {
    const tp2 = { tpRank: 0, tpSize: 2 };
    expect(reductions(planAllReducePlacement(cfg, tp2, 'dense'))).toEqual([
      'deferred',
      'immediate',
      'immediate',
      'immediate',
    ]);
    expect(reductions(planAllReducePlacement(cfg, tp2, 'off'))).toEqual(Array(4).fill('immediate'));
    expect(reductions(planAllReducePlacement(cfg, tp2, 'all'))).toEqual(Array(4).fill('deferred'));
    expect(reductions(planAllReducePlacement(cfg, { tpRank: 0, tpSize: 1 }, 'all'))).toEqual(
      Array(4).fill('none'),
    );
  });

  it('has nothing to defer under SP', () => {
    const sp = { tpRank: 0, tpSize: 2, sp: true };
    expect(reductions(planAllReducePlacement(cfg, sp, 'all'))).toEqual(
      Array(4).fill('reduce-scatter'),
    );
    const spEp = { ...sp, ep: true };
    expect(reductions(planAllReducePlacement(cfg, spEp, 'dense'))).toEqual([
      'reduce-scatter',
      'token-shard',
      'token-shard',
      'token-shard',
    ]);
  });

  it('prints one line per layer saying where the reduction goes', () => {
    const p = { tpRank: 0, tpSize: 2 };
    const table = formatPlacementTable(planAllReducePlacement(cfg, p, 'all'), p, 'all');
    expect(table).toContain('layer 1 input norm');
    expect(table).toContain('final norm');
    expect(table.split('\n')).toHaveLength(2 + 4);
    expect(() => parseAllReduceFusion('sparse')).toThrow(/off, dense, all/);
  });
});

describe('token shards and expert dispatch', () => {
  it('pads the last shards', () => {
    expect([0, 1, 2, 3].map((r) => tokenShard(5, 4, r))).toEqual([
      { start: 0, count: 2, size: 2 },
      { start: 2, count: 2, size: 2 },
      { start: 4, count: 1, size: 2 },
      { start: 6, count: 0, size: 2 },
    ]);
  });

  it('sends a token once per owning rank and sums the returns in rank order', () => {
    // 3 tokens, top-2 of 8 experts over 4 ranks (2 experts each).
    const ids = Int32Array.from([0, 1, 7, 2, 6, 7]);
    const plan = planDispatch(ids, 2, 3, 2, 4);
    expect(plan.sendRows).toEqual([1, 1, 0, 2]);
    expect(Array.from(plan.tokenOfRow)).toEqual([0, 1, 1, 2]);
    const back = Float32Array.from([1, 2, 3, 4]); // D = 1
    expect(Array.from(combineInRankOrder(back, plan.tokenOfRow, 3, 1))).toEqual([1, 5, 4]);
    expect(() => planDispatch(Int32Array.from([8, 0]), 2, 1, 2, 4)).toThrow(/no owner/);
  });
});
