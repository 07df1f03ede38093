import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  formatTraceSummary,
  readTraceDir,
  summarizeTrace,
  trend,
  type TraceRecord,
} from './allreduce-trace-summary.js';

const line = (layer: number, rank: number, res: number, norm: number): TraceRecord => ({
  layer_id: layer,
  is_sparse: layer >= 1,
  group: layer >= 1 ? 'moe_tp' : 'tp',
  shape: [186, 6144],
  dtype: 'bfloat16',
  residual_max_diff: res,
  norm_max_diff: norm,
  rank,
  step: 0,
  variant: 'bf16-vendor',
});

describe('trace summarize', () => {
  it('takes the max over ranks and calls, finds the first layer over the threshold', () => {
    const recs = [
      line(0, 0, 0, 0),
      line(0, 1, 0, 0),
      line(1, 0, 0.5, 0.001),
      line(1, 1, 2, 0.0039),
      line(2, 0, 8, 0.06),
      line(3, 1, 32, 0.25),
    ];
    const s = summarizeTrace(recs, 1);
    expect(s.layers.map((l) => [l.layer_id, l.calls, l.ranks, l.residual_max_diff])).toEqual([
      [0, 2, 2, 0],
      [1, 2, 2, 2],
      [2, 1, 1, 8],
      [3, 1, 1, 32],
    ]);
    expect(s.first_exceeding).toEqual({ layer_id: 1, metric: 'residual', value: 2 });
    expect(s.accumulation).toMatchObject({
      over: 'sparse',
      first_layer: 1,
      last_layer: 3,
      residual_ratio: 16,
      residual_trend: 'growing',
      norm_trend: 'growing',
    });
    expect(summarizeTrace(recs, 100).first_exceeding).toBeNull();
    expect(formatTraceSummary(s)).toMatch(/first layer over threshold 1: 1 \(residual 2\.000\)/);
    expect(formatTraceSummary(s)).toMatch(/residual last\/first 16\.00 \(growing\)/);
  });

  it('counts a NaN diff (null in JSON) as infinite', () => {
    const bad = { ...line(1, 0, 0, 0), residual_max_diff: null as unknown as number };
    const s = summarizeTrace([line(0, 0, 0, 0), bad]);
    expect(s.layers[1]!.residual_max_diff).toBe(Infinity);
    expect(s.first_exceeding?.layer_id).toBe(1);
  });

  it('trends', () => {
    expect(trend([1])).toBe('n/a');
    expect(trend([0, 0, 0])).toBe('flat');
    expect(trend([1, 1, 2])).toBe('growing');
    expect(trend([1, 3, 2])).toBe('mixed');
  });

  it('reads rank<r>.jsonl files and names a bad line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'moeserve-trace-sum-'));
    writeFileSync(join(dir, 'rank0.jsonl'), JSON.stringify(line(0, 0, 0, 0)) + '\n');
    writeFileSync(join(dir, 'rank1.jsonl'), JSON.stringify(line(0, 1, 0, 0)) + '\n');
    writeFileSync(join(dir, 'notes.txt'), 'ignored');
    expect(readTraceDir(dir).records).toHaveLength(2);
    writeFileSync(join(dir, 'rank2.jsonl'), '{"layer_id": 0,\n');
    expect(() => readTraceDir(dir)).toThrow(/rank2\.jsonl:1/);
    expect(() => readTraceDir(mkdtempSync(join(tmpdir(), 'empty-')))).toThrow(/no rank<r>/);
  });
});
