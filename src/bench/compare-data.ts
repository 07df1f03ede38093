import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

export type ResultRow = Record<string, unknown>;

/** One arm: every run line from its files, grouped by the load point. */
export interface Arm {
  label: string;
  rows: ResultRow[];
}

/** Reads bench serve JSONL (or one pretty-printed JSON result, as vLLM writes). */
export function readResultRows(path: string): ResultRow[] {
  const text = readFileSync(path, 'utf8').trim();
  if (text === '') return [];
  try {
    const one = JSON.parse(text) as unknown;
    if (one && typeof one === 'object' && !Array.isArray(one)) return [one as ResultRow];
  } catch {
    // Not a single JSON document: JSONL.
  }
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l, i) => {
      try {
        return JSON.parse(l) as ResultRow;
      } catch (e) {
        throw new Error(`${path}:${i + 1}: ${(e as Error).message}`);
      }
    });
}

/** `LABEL=a.jsonl,b.jsonl`, or `a.jsonl` labelled by its file name. */
export function parseArmSpec(spec: string): { label: string; paths: string[] } {
  const eq = spec.indexOf('=');
  const [label, files] = eq > 0 ? [spec.slice(0, eq), spec.slice(eq + 1)] : ['', spec];
  const paths = files.split(',').filter((p) => p !== '');
  if (paths.length === 0) throw new Error(`arm "${spec}" names no file`);
  return { label: label || basename(paths[0] as string).replace(/\.jsonl?$/, ''), paths };
}

export function loadArm(spec: string): Arm {
  const { label, paths } = parseArmSpec(spec);
  const rows = paths.flatMap(readResultRows);
  if (rows.length === 0) throw new Error(`arm "${label}": no result lines in ${paths.join(', ')}`);
  return { label, rows };
}

/** The load point of a run: its concurrency, plus the request rate when one was set. */
export function loadPointOf(row: ResultRow): { key: string; concurrency: number } {
  const c = typeof row['max_concurrency'] === 'number' ? row['max_concurrency'] : Infinity;
  const rate = row['request_rate'];
  const finiteRate = typeof rate === 'number' && Number.isFinite(rate);
  const conc = Number.isFinite(c) ? String(c) : 'inf';
  return { key: finiteRate ? `${conc} @ ${rate} req/s` : conc, concurrency: c };
}

/** Load-point keys present in any arm, by concurrency then name. */
export function loadPoints(arms: readonly Arm[]): string[] {
  const seen = new Map<string, number>();
  for (const a of arms)
    for (const r of a.rows) {
      const p = loadPointOf(r);
      seen.set(p.key, p.concurrency);
    }
  return [...seen.entries()].sort((x, y) => x[1] - y[1] || (x[0] < y[0] ? -1 : 1)).map(([k]) => k);
}

/** The metric's value in each run of `arm` at `point`. */
export function valuesAt(arm: Arm, point: string, metric: string): number[] {
  return arm.rows
    .filter((r) => loadPointOf(r).key === point)
    .map((r) => r[metric])
    .filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
}

const WORKLOAD_KEYS = [
  'dataset_name',
  'random_input_len',
  'random_output_len',
  'random_range_ratio',
  'range_ratio_convention',
  'ttft_convention',
  'num_prompts',
];

/** Workload fields that differ between runs: comparing those is comparing different tests. */
export function workloadMismatches(arms: readonly Arm[]): string[] {
  const out: string[] = [];
  for (const k of WORKLOAD_KEYS) {
    const vals = new Set(arms.flatMap((a) => a.rows.map((r) => JSON.stringify(r[k] ?? null))));
    if (vals.size > 1) out.push(`${k} differs between runs: ${[...vals].join(', ')}`);
  }
  return out;
}
