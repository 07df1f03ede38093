import { beforeAll, describe, expect, it } from 'vitest';
import { loadModelConfig, type ModelConfig } from '../../src/config/model-config.js';
import { planAllReducePlacement } from '../../src/parallel/allreduce-placement.js';
import {
  bytesPerLayer,
  expectedCollectives,
  type ExpectedCollective,
} from '../../src/parallel/comm-volume.js';
import {
  forwardOnRanks,
  layoutName,
  writeDeepRandomCheckpoint,
  type LayoutCase,
} from './rank-harness.js';

const LAYOUTS: LayoutCase[] = [
  { tp: 2 },
  { tp: 4 },
  { tp: 2, fusion: 'off' },
  { tp: 4, fusion: 'all' },
  { tp: 2, ep: true },
  { tp: 4, ep: true },
  { tp: 2, sp: true },
  { tp: 4, sp: true },
  { tp: 4, ep: true, sp: true },
];

describe('bytes moved per layer equal the analytic formula', () => {
  let dir: string;
  let cfg: ModelConfig;
  // 21 tokens: not a multiple of 2 or 4, so SP pads the last shard.
  const ids = Array.from({ length: 21 }, (_, i) => (i * 53 + 5) % 256);
  beforeAll(() => {
    dir = writeDeepRandomCheckpoint();
    cfg = loadModelConfig(dir);
  });

  for (const c of LAYOUTS) {
    it(layoutName(c), async () => {
      const { results, logs } = await forwardOnRanks(dir, c, ids);
      const routes = Object.fromEntries(
        Object.entries(results[0]!.routedExperts).map(([l, rows]) => [
          l,
          Int32Array.from(rows.flat()),
        ]),
      );
      const perRank: ExpectedCollective[][] = logs.map((log, rank) => {
        const p = { tpRank: rank, tpSize: c.tp, ep: c.ep, sp: c.sp };
        const want = expectedCollectives(
          cfg,
          p,
          planAllReducePlacement(cfg, p, c.fusion ?? 'dense'),
          {
            numTokens: ids.length,
            numLogitRows: ids.length,
            elemBytes: 4,
            routes,
            captureRoutes: true,
          },
        );
        expect(log.map((r) => [r.op, r.elems, r.bytesSent])).toEqual(
          want.map((w) => [w.op, w.elems, w.bytesSent]),
        );
        return want;
      });
      // Closed forms, summed over ranks, for the layers without expert all-to-alls.
      const W = c.tp;
      const T = ids.length;
      const D = cfg.hiddenSize;
      const rowsMoved = c.sp ? W * Math.ceil(T / W) : T;
      const totals = new Map<number | 'head', number>();
      for (const list of perRank)
        for (const [k, v] of bytesPerLayer(list)) totals.set(k, (totals.get(k) ?? 0) + v);
      cfg.moeLayers.forEach((moe, layer) => {
        if (moe && c.ep) return;
        // Two reductions of [rows, D] float32 per layer, each 2(W−1)·rows·D elements in total.
        expect(totals.get(layer), `layer ${layer}`).toBe(2 * 2 * (W - 1) * rowsMoved * D * 4);
      });
    });
  }
});
