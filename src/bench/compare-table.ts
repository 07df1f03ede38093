import { mean } from './stats.js';
import { loadPointOf, loadPoints, valuesAt, workloadMismatches, type Arm } from './compare-data.js';

export interface MetricDef {
  key: string;
  label: string;
  unit: string;
  higherIsBetter: boolean;
}

const KNOWN: Record<string, [string, string]> = {
  output_throughput: ['Output throughput', 'tok/s'],
  total_throughput: ['Total throughput', 'tok/s'],
  input_throughput: ['Input throughput', 'tok/s'],
  request_throughput: ['Request throughput', 'req/s'],
  max_output_tokens_per_s: ['Peak output throughput', 'tok/s'],
};

/** Field name → how to show and judge it: `_ms` fields are latencies (lower is better). */
export function metricDef(key: string): MetricDef {
  const known = KNOWN[key];
  if (known) return { key, label: known[0], unit: known[1], higherIsBetter: true };
  const m = /^(mean|median|std|p\d+)_(.+)_ms$/.exec(key);
  if (m) {
    const stat =
      m[1] === 'median' ? 'P50' : m[1] === 'mean' ? 'Mean' : (m[1] as string).toUpperCase();
    const what = (m[2] as string).replace('e2e_latency', 'E2E').toUpperCase();
    return { key, label: `${stat} ${what}`, unit: 'ms', higherIsBetter: false };
  }
  return { key, label: key, unit: '', higherIsBetter: !key.endsWith('_ms') };
}

export const DEFAULT_COMPARE_METRICS = [
  'output_throughput',
  'mean_tpot_ms',
  'median_tpot_ms',
  'p99_tpot_ms',
  'median_ttft_ms',
];

/** Seed-style numbers: 2,212 tok/s, 29.37 ms. */
export function formatValue(v: number, unit: string): string {
  const digits = unit !== 'ms' && Math.abs(v) >= 100 ? 0 : 2;
  return v.toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}

export function formatRange(vals: readonly number[], unit: string): string {
  if (vals.length === 0) return '–';
  const lo = formatValue(Math.min(...vals), unit);
  const hi = formatValue(Math.max(...vals), unit);
  return `${lo === hi ? lo : `${lo}–${hi}`}${unit ? ` ${unit}` : ''}`;
}

export type Verdict = 'better' | 'worse' | 'tie';

/** Tie when the [min, max] ranges overlap; otherwise by the metric's direction. */
export function verdict(
  base: readonly number[],
  arm: readonly number[],
  higherIsBetter: boolean,
): Verdict {
  const overlap = Math.min(...base) <= Math.max(...arm) && Math.min(...arm) <= Math.max(...base);
  if (overlap) return 'tie';
  return mean(arm) > mean(base) === higherIsBetter ? 'better' : 'worse';
}

function metricTable(arms: readonly Arm[], points: readonly string[], def: MetricDef): string[] {
  const dir = def.higherIsBetter ? 'higher is better' : 'lower is better';
  const lines = [`### ${def.label} (${def.unit || 'value'}, ${dir})`, ''];
  lines.push(`| Concurrency | ${arms.map((a) => a.label).join(' | ')} |`);
  lines.push(`|---|${arms.map(() => '---').join('|')}|`);
  for (const p of points) {
    const vals = arms.map((a) => valuesAt(a, p, def.key));
    const means = vals.map((v) => (v.length > 0 ? mean(v) : NaN)).filter((m) => !Number.isNaN(m));
    const best = def.higherIsBetter ? Math.max(...means) : Math.min(...means);
    const cells = vals.map((v) => {
      const cell = formatRange(v, def.unit);
      return v.length > 0 && mean(v) === best && arms.length > 1 ? `**${cell}**` : cell;
    });
    lines.push(`| ${p} | ${cells.join(' | ')} |`);
  }
  return [...lines, ''];
}

interface DeltaRow {
  def: MetricDef;
  point: string;
  arm: string;
  abs: number;
  pct: number;
  verdict: Verdict;
}

export function computeDeltas(
  arms: readonly Arm[],
  baseIdx: number,
  metrics: readonly MetricDef[],
): DeltaRow[] {
  const base = arms[baseIdx] as Arm;
  const out: DeltaRow[] = [];
  for (const def of metrics)
    for (const point of loadPoints(arms)) {
      const b = valuesAt(base, point, def.key);
      if (b.length === 0) continue;
      for (const a of arms) {
        const v = valuesAt(a, point, def.key);
        if (a === base || v.length === 0) continue;
        const abs = mean(v) - mean(b);
        const pct = mean(b) !== 0 ? (100 * abs) / mean(b) : NaN;
        out.push({
          def,
          point,
          arm: a.label,
          abs,
          pct,
          verdict: verdict(b, v, def.higherIsBetter),
        });
      }
    }
  return out;
}

function runsPerPoint(arm: Arm, points: readonly string[]): string {
  const counts = points.map((p) => valuesAt(arm, p, 'completed').length || countRows(arm, p));
  const lo = Math.min(...counts.filter((c) => c > 0));
  const hi = Math.max(...counts);
  return lo === hi ? String(hi) : `${lo}–${hi}`;
}

const countRows = (arm: Arm, point: string): number =>
  arm.rows.filter((r) => loadPointOf(r).key === point).length;

const signed = (v: number, s: string): string => `${v >= 0 ? '+' : ''}${s}`;

/** The whole Markdown report: one range table per metric, then deltas and verdicts. */
export function compareMarkdown(
  arms: readonly Arm[],
  baseIdx: number,
  metricKeys: readonly string[],
): string {
  const defs = metricKeys.map(metricDef);
  const points = loadPoints(arms);
  const base = arms[baseIdx] as Arm;
  const runs = arms.map((a) => `${a.label} (${runsPerPoint(a, points)} runs)`).join(', ');
  const lines = [`# ${arms.map((a) => a.label).join(' vs ')}`, ''];
  lines.push(`Arms: ${runs}. Each cell is the range over runs; best (by mean) in **bold**.`, '');
  for (const w of workloadMismatches(arms)) lines.push(`> warning: ${w}`, '');
  const present = defs.filter((d) =>
    arms.some((a) => points.some((p) => valuesAt(a, p, d.key).length > 0)),
  );
  for (const d of present) lines.push(...metricTable(arms, points, d));
  lines.push(`### Deltas vs ${base.label} (difference of means)`, '');
  lines.push('| Metric | Concurrency | Arm | Δ | Δ % | Verdict |', '|---|---|---|---|---|---|');
  for (const r of computeDeltas(arms, baseIdx, present)) {
    const abs = signed(
      r.abs,
      `${formatValue(r.abs, r.def.unit === 'ms' ? 'ms' : '')} ${r.def.unit}`.trim(),
    );
    const pct = Number.isNaN(r.pct) ? '–' : signed(r.pct, `${r.pct.toFixed(2)}%`);
    lines.push(`| ${r.def.label} | ${r.point} | ${r.arm} | ${abs} | ${pct} | ${r.verdict} |`);
  }
  return lines.join('\n') + '\n';
}

/** The one-line summary of a comparison: verdict counts of every arm against the baseline. */
export function compareSummary(
  arms: readonly Arm[],
  baseIdx: number,
  metricKeys: readonly string[],
): string {
  const rows = computeDeltas(arms, baseIdx, metricKeys.map(metricDef));
  const count = (v: Verdict) => rows.filter((r) => r.verdict === v).length;
  return (
    `compare: ${arms.length} arms vs ${arms[baseIdx]!.label}, ${loadPoints(arms).length} load ` +
    `points, ${rows.length} deltas: ${count('better')} better, ${count('worse')} worse, ` +
    `${count('tie')} tie`
  );
}
