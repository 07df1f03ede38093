import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TraceLine } from '../../src/model/minimax-m3/allreduce-trace.js';
import {
  formatTraceSummary,
  readTraceDir,
  summarizeTrace,
} from '../../src/parallel/allreduce-trace-summary.js';
import type { ReductionVariant } from '../../src/parallel/reduction-semantics.js';
import { goldenCase } from '../golden-dir.js';
import { forwardOnRanks, writeDeepRandomCheckpoint, type LayoutCase } from './rank-harness.js';

const TINY_MOE = goldenCase('tiny-moe'); // layer 0 dense, layers 1–3 MoE
const IDS = [1, 7, 42, 99, 3, 250, 17, 64, 5];

async function traced(
  dir: string,
  c: Omit<LayoutCase, 'trace'>,
  variant: ReductionVariant,
  ids = IDS,
): Promise<{ traceDir: string; lines: TraceLine[][]; logits: number[][] }> {
  const traceDir = mkdtempSync(join(tmpdir(), `moeserve-trace-${variant}-`));
  const { results } = await forwardOnRanks(dir, { ...c, trace: { dir: traceDir, variant } }, ids);
  const lines = Array.from({ length: c.tp }, (_, r) =>
    readFileSync(join(traceDir, `rank${r}.jsonl`), 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as TraceLine),
  );
  return { traceDir, lines, logits: results[0]!.logits };
}

describe('fused-versus-native all-reduce trace (seed 000, issue 5)', () => {
  it('exact definition, --allreduce-fusion all: zero diffs on every layer and rank', async () => {
    const { lines, logits } = await traced(TINY_MOE, { tp: 2, fusion: 'all' }, 'exact');
    for (const [rank, ls] of lines.entries()) {
      expect(ls.map((l) => l.layer_id)).toEqual([0, 1, 2, 3]);
      expect(ls.map((l) => l.is_sparse)).toEqual([false, true, true, true]);
      expect(ls.map((l) => l.norm)).toEqual([
        'layer 1 input',
        'layer 2 input',
        'layer 3 input',
        'final',
      ]);
      for (const l of ls) {
        expect(l).toMatchObject({ rank, world_size: 2, shape: [IDS.length, 64], dtype: 'float32' });
        expect(l.group).toBe(l.is_sparse ? 'moe_tp' : 'tp');
        expect([l.residual_max_diff, l.norm_max_diff]).toEqual([0, 0]);
      }
    }
    // The traced run is the fused run: bit-identical to reducing immediately.
    const off = await forwardOnRanks(TINY_MOE, { tp: 2, fusion: 'off' }, IDS);
    expect(logits).toEqual(off.results[0]!.logits);
  });

  it('exact definition, default --allreduce-fusion dense traces only the dense layer', async () => {
    const { lines } = await traced(TINY_MOE, { tp: 2 }, 'exact');
    for (const ls of lines)
      expect(ls.map((l) => [l.layer_id, l.residual_max_diff])).toEqual([[0, 0]]);
  });

  it('bf16 vendor-like arithmetic: the trace detects the divergence on every layer', async () => {
    const { traceDir, lines } = await traced(TINY_MOE, { tp: 2, fusion: 'all' }, 'bf16-vendor');
    for (const ls of lines) {
      expect(ls).toHaveLength(4);
      for (const l of ls) {
        expect(l.variant).toBe('bf16-vendor');
        expect(l.residual_max_diff).toBeGreaterThan(0);
        expect(l.norm_max_diff).toBeGreaterThan(0);
      }
    }
    const { files, records } = readTraceDir(traceDir);
    const s = summarizeTrace(records, 0, files);
    expect(s.first_exceeding?.layer_id).toBe(0);
    expect(s.layers.map((l) => l.calls)).toEqual([2, 2, 2, 2]);
    expect(s.accumulation.over).toBe('sparse');
    expect(formatTraceSummary(s)).toMatch(/first layer over threshold 0: 0/);
  });
});

describe('fused-versus-native trace on a deeper random checkpoint', () => {
  let dir: string;
  const ids = Array.from({ length: 21 }, (_, i) => (i * 37 + 11) % 256);
  beforeAll(() => {
    dir = writeDeepRandomCheckpoint();
  });

  for (const c of [
    { tp: 2, fusion: 'all' },
    { tp: 2, ep: true, fusion: 'all' },
  ] as const) {
    it(`exact: zero on all 8 layers (tp2${'ep' in c ? ' ep' : ''} fusion all)`, async () => {
      const { traceDir } = await traced(dir, c, 'exact', ids);
      const s = summarizeTrace(readTraceDir(traceDir).records);
      expect(s.layers).toHaveLength(8);
      expect(s.first_exceeding).toBeNull();
      expect(s.layers.every((l) => l.residual_max_diff === 0 && l.norm_max_diff === 0)).toBe(true);
    });
  }

  it('bf16 vendor-like: non-zero on every layer', async () => {
    const { traceDir } = await traced(dir, { tp: 2, fusion: 'all' }, 'bf16-vendor', ids);
    const s = summarizeTrace(readTraceDir(traceDir).records);
    expect(s.layers.every((l) => l.residual_max_diff > 0 && l.norm_max_diff > 0)).toBe(true);
  });
});
