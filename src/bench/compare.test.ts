import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadArm, parseArmSpec, type Arm } from './compare-data.js';
import { niceStep, compareSvg } from './compare-svg.js';
import {
  compareMarkdown,
  computeDeltas,
  formatRange,
  metricDef,
  verdict,
} from './compare-table.js';

const dir = mkdtempSync(join(tmpdir(), 'compare-'));

/** Seed 001's output throughput and P50 TTFT, two runs per arm. */
function writeArm(name: string, cells: Record<number, [number, number, number, number]>): string {
  const lines: string[] = [];
  for (const run of [0, 1])
    for (const [c, v] of Object.entries(cells))
      lines.push(
        JSON.stringify({
          max_concurrency: Number(c),
          request_rate: 'inf',
          run_index: run,
          dataset_name: 'random',
          output_throughput: v[run],
          median_ttft_ms: v[2 + run],
        }),
      );
  const path = join(dir, `${name}.jsonl`);
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
}

const ep = writeArm('ep', {
  1: [370, 370, 140, 140],
  4: [928, 950, 163, 167],
  64: [4299, 4338, 266, 280],
});
const sp = writeArm('sp', {
  1: [355, 355, 111, 114],
  4: [945, 972, 134, 137],
  64: [4896, 4914, 233, 236],
});

describe('compare', () => {
  const arms: Arm[] = [loadArm(`TP4 + EP=${ep}`), loadArm(sp)];

  it('parses arm specs', () => {
    expect(parseArmSpec('A=x.jsonl,y.jsonl')).toEqual({
      label: 'A',
      paths: ['x.jsonl', 'y.jsonl'],
    });
    expect(parseArmSpec('/r/fusion_on.jsonl')).toEqual({
      label: 'fusion_on',
      paths: ['/r/fusion_on.jsonl'],
    });
    expect(arms[1]?.label).toBe('sp');
  });

  it('judges better, worse, and tie when ranges overlap', () => {
    expect(verdict([928, 950], [945, 972], true)).toBe('tie');
    expect(verdict([370, 370], [355, 355], true)).toBe('worse');
    expect(verdict([140, 140], [111, 114], false)).toBe('better');
    const deltas = computeDeltas(arms, 0, [metricDef('output_throughput')]);
    expect(deltas.map((d) => [d.point, d.verdict])).toEqual([
      ['1', 'worse'],
      ['4', 'tie'],
      ['64', 'better'],
    ]);
    expect(deltas[0]?.abs).toBe(-15);
    expect(deltas[0]?.pct).toBeCloseTo((-15 / 370) * 100, 9);
  });

  it('prints range cells with the best mean in bold, deltas and verdicts', () => {
    const md = compareMarkdown(arms, 0, ['output_throughput', 'median_ttft_ms']);
    expect(md).toContain('| 1 | **370 tok/s** | 355 tok/s |');
    expect(md).toContain('| 64 | 4,299–4,338 tok/s | **4,896–4,914 tok/s** |');
    expect(md).toContain('| 4 | 163.00–167.00 ms | **134.00–137.00 ms** |');
    expect(md).toContain('| Output throughput | 1 | sp | -15.00 tok/s | -4.05% | worse |');
    expect(md).toContain('| P50 TTFT | 64 | sp | -38.50 ms | -14.10% | better |');
    expect(md).not.toContain('warning');
  });

  it('formats seed-style numbers', () => {
    expect(formatRange([2212.4, 2245.1], 'tok/s')).toBe('2,212–2,245 tok/s');
    expect(formatRange([29.37], 'ms')).toBe('29.37 ms');
    expect(metricDef('p99_tpot_ms')).toMatchObject({ label: 'P99 TPOT', higherIsBetter: false });
  });

  it('draws both panels with one series per arm', () => {
    const svg = compareSvg(arms, ['output_throughput', 'median_ttft_ms']);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.match(/<polyline /g)).toHaveLength(4);
    expect(svg.match(/<circle /g)).toHaveLength(12);
    expect(svg).toContain('Output throughput (tok/s)');
    expect(svg).toContain('>TP4 + EP</text>');
    expect(niceStep(4914)).toBe(1000);
    expect(niceStep(280)).toBe(100);
  });
});
