import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The fields of a trace line the summary reads (shared/design/architecture.md §4). */
export interface TraceRecord {
  readonly layer_id: number;
  readonly is_sparse: boolean;
  readonly group: string;
  readonly shape: readonly number[];
  readonly dtype: string;
  readonly residual_max_diff: number;
  readonly norm_max_diff: number;
  readonly residual_max_abs?: number;
  readonly rank?: number;
  readonly step?: number;
  readonly variant?: string;
}

export interface LayerTraceSummary {
  readonly layer_id: number;
  readonly is_sparse: boolean;
  readonly group: string;
  /** Trace lines of this layer over all ranks and steps. */
  readonly calls: number;
  readonly ranks: number;
  readonly residual_max_diff: number;
  readonly norm_max_diff: number;
  /** max |r'| over the layer's calls (null when the lines do not carry it). */
  readonly residual_max_abs: number | null;
}

/** Whether the per-layer max diffs grow with depth. */
export interface Accumulation {
  /** Which layers were compared: the sparse ones when there are two or more, else all. */
  readonly over: 'sparse' | 'all';
  readonly first_layer: number | null;
  readonly last_layer: number | null;
  /** last layer's max / first layer's max (null when the first is 0 or there is one layer). */
  readonly residual_ratio: number | null;
  readonly norm_ratio: number | null;
  /** 'growing': never decreases and ends higher; 'flat': all equal; else 'mixed'. */
  readonly residual_trend: Trend;
  readonly norm_trend: Trend;
}

export type Trend = 'growing' | 'flat' | 'mixed' | 'n/a';

export interface TraceSummary {
  readonly files: number;
  readonly lines: number;
  readonly variants: readonly string[];
  readonly threshold: number;
  readonly layers: readonly LayerTraceSummary[];
  /** The first layer (by id) whose residual or norm max diff exceeds the threshold. */
  readonly first_exceeding: { layer_id: number; metric: 'residual' | 'norm'; value: number } | null;
  readonly accumulation: Accumulation;
}

/** Every line of every `rank<r>.jsonl` in `dir`. */
export function readTraceDir(dir: string): { files: number; records: TraceRecord[] } {
  const names = readdirSync(dir)
    .filter((n) => /^rank\d+\.jsonl$/.test(n))
    .sort();
  if (names.length === 0) throw new Error(`${dir}: no rank<r>.jsonl files`);
  const records: TraceRecord[] = [];
  for (const name of names) {
    const text = readFileSync(join(dir, name), 'utf8');
    text.split('\n').forEach((line, i) => {
      if (line.trim() === '') return;
      try {
        records.push(JSON.parse(line) as TraceRecord);
      } catch (e) {
        throw new Error(`${name}:${i + 1}: ${(e as Error).message}`);
      }
    });
  }
  return { files: names.length, records };
}

export function summarizeTrace(
  records: readonly TraceRecord[],
  threshold = 0,
  files = 1,
): TraceSummary {
  const byLayer = new Map<number, TraceRecord[]>();
  for (const r of records) byLayer.set(r.layer_id, [...(byLayer.get(r.layer_id) ?? []), r]);
  const layers = [...byLayer.entries()]
    .sort(([a], [b]) => a - b)
    .map(([layer_id, rs]): LayerTraceSummary => {
      const first = rs[0]!;
      return {
        layer_id,
        is_sparse: first.is_sparse,
        group: first.group,
        calls: rs.length,
        ranks: new Set(rs.map((r) => r.rank ?? 0)).size,
        residual_max_diff: maxOf(rs.map((r) => r.residual_max_diff)),
        norm_max_diff: maxOf(rs.map((r) => r.norm_max_diff)),
        residual_max_abs: rs.every((r) => typeof r.residual_max_abs === 'number')
          ? maxOf(rs.map((r) => r.residual_max_abs!))
          : null,
      };
    });
  return {
    files,
    lines: records.length,
    variants: [...new Set(records.map((r) => r.variant ?? '?'))],
    threshold,
    layers,
    first_exceeding: firstExceeding(layers, threshold),
    accumulation: accumulation(layers),
  };
}

function maxOf(xs: readonly number[]): number {
  // A NaN/Infinity diff (serialised as null by JSON) is the worst possible.
  return xs.reduce(
    (m, x) => (typeof x === 'number' && Number.isFinite(x) ? Math.max(m, x) : Infinity),
    0,
  );
}

function firstExceeding(
  layers: readonly LayerTraceSummary[],
  threshold: number,
): TraceSummary['first_exceeding'] {
  for (const l of layers) {
    if (l.residual_max_diff > threshold)
      return { layer_id: l.layer_id, metric: 'residual', value: l.residual_max_diff };
    if (l.norm_max_diff > threshold)
      return { layer_id: l.layer_id, metric: 'norm', value: l.norm_max_diff };
  }
  return null;
}

function accumulation(layers: readonly LayerTraceSummary[]): Accumulation {
  const sparse = layers.filter((l) => l.is_sparse);
  const over = sparse.length >= 2 ? 'sparse' : 'all';
  const ls = over === 'sparse' ? sparse : layers;
  const first = ls[0];
  const last = ls[ls.length - 1];
  const ratio = (k: 'residual_max_diff' | 'norm_max_diff'): number | null =>
    first && last && ls.length >= 2 && first[k] > 0 ? last[k] / first[k] : null;
  return {
    over,
    first_layer: first?.layer_id ?? null,
    last_layer: last?.layer_id ?? null,
    residual_ratio: ratio('residual_max_diff'),
    norm_ratio: ratio('norm_max_diff'),
    residual_trend: trend(ls.map((l) => l.residual_max_diff)),
    norm_trend: trend(ls.map((l) => l.norm_max_diff)),
  };
}

export function trend(xs: readonly number[]): Trend {
  if (xs.length < 2) return 'n/a';
  if (xs.every((x) => x === xs[0])) return 'flat';
  const nonDecreasing = xs.every((x, i) => i === 0 || x >= xs[i - 1]!);
  return nonDecreasing ? 'growing' : 'mixed';
}

/** The summary as a table plus the verdict lines. */
export function formatTraceSummary(s: TraceSummary): string {
  const lines = [
    `${s.lines} fused calls from ${s.files} rank files, variant ${s.variants.join(', ')}`,
    '  layer  ffn     group   calls  ranks  residual_max_diff  norm_max_diff  max|residual|',
  ];
  for (const l of s.layers) {
    lines.push(
      `  ${String(l.layer_id).padStart(5)}  ${(l.is_sparse ? 'sparse' : 'dense').padEnd(6)}  ` +
        `${l.group.padEnd(6)}  ${String(l.calls).padStart(5)}  ${String(l.ranks).padStart(5)}  ` +
        `${fmt(l.residual_max_diff).padStart(17)}  ${fmt(l.norm_max_diff).padStart(13)}  ` +
        `${(l.residual_max_abs === null ? '-' : fmt(l.residual_max_abs)).padStart(13)}`,
    );
  }
  const f = s.first_exceeding;
  lines.push(
    f
      ? `first layer over threshold ${s.threshold}: ${f.layer_id} (${f.metric} ${fmt(f.value)})`
      : `no layer over threshold ${s.threshold}`,
  );
  const a = s.accumulation;
  const ratio = (r: number | null): string => (r === null ? 'n/a' : fmt(r));
  lines.push(
    `accumulation over ${a.over} layers ${a.first_layer ?? '-'}..${a.last_layer ?? '-'}: ` +
      `residual last/first ${ratio(a.residual_ratio)} (${a.residual_trend}), ` +
      `norm last/first ${ratio(a.norm_ratio)} (${a.norm_trend})`,
  );
  return lines.join('\n');
}

function fmt(x: number): string {
  if (x === 0) return '0';
  if (!Number.isFinite(x)) return String(x);
  return Math.abs(x) >= 1e-3 && Math.abs(x) < 1e4 ? x.toPrecision(4) : x.toExponential(3);
}
