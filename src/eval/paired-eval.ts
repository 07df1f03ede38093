import { readFileSync } from 'node:fs';
import { mcnemarExactP } from './mcnemar.js';

/** One item of an eval run: its index, whether it was right, and how it finished. */
export interface PairedItem {
  readonly idx: number;
  readonly correct: boolean;
  readonly finishReason: string | undefined;
}

export interface PairedReport {
  readonly n: number;
  readonly accA: number;
  readonly accB: number;
  /** Right in both, A only, B only, neither. */
  readonly both: number;
  readonly onlyA: number;
  readonly onlyB: number;
  readonly neither: number;
  readonly pValue: number;
  /** Items whose finish_reason differs between the runs (stop-rate records). */
  readonly finishDiffers: number;
  /** Indices present in one run only (not compared). */
  readonly unpaired: number;
}

/**
 * Reads the per-item JSONL of `eval stop-rate` (`correct`) or `eval gsm8k`
 * (`flexibleCorrect` / `strictCorrect`); items with an error are skipped.
 */
export function readEvalItems(path: string, field: string): Map<number, PairedItem> {
  const items = new Map<number, PairedItem>();
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    const r = JSON.parse(line) as Record<string, unknown>;
    if (typeof r['idx'] !== 'number' || r['error'] !== undefined) continue;
    if (typeof r[field] !== 'boolean')
      throw new Error(`${path}: item ${r['idx']} has no boolean "${field}"`);
    const finish = typeof r['finish_reason'] === 'string' ? r['finish_reason'] : undefined;
    items.set(r['idx'], { idx: r['idx'], correct: r[field] as boolean, finishReason: finish });
  }
  return items;
}

export function pairEvals(a: Map<number, PairedItem>, b: Map<number, PairedItem>): PairedReport {
  let [both, onlyA, onlyB, neither, finishDiffers] = [0, 0, 0, 0, 0];
  for (const [idx, x] of a) {
    const y = b.get(idx);
    if (!y) continue;
    if (x.correct && y.correct) both++;
    else if (x.correct) onlyA++;
    else if (y.correct) onlyB++;
    else neither++;
    if (x.finishReason !== y.finishReason) finishDiffers++;
  }
  const n = both + onlyA + onlyB + neither;
  const paired = new Set([...a.keys()].filter((k) => b.has(k)));
  return {
    n,
    accA: n ? (both + onlyA) / n : 0,
    accB: n ? (both + onlyB) / n : 0,
    both,
    onlyA,
    onlyB,
    neither,
    pValue: mcnemarExactP(onlyA, onlyB),
    finishDiffers,
    unpaired: a.size + b.size - 2 * paired.size,
  };
}

export function formatPaired(r: PairedReport, labels: readonly [string, string]): string {
  const pct = (x: number): string => `${(100 * x).toFixed(2)}%`;
  return [
    `paired items: ${r.n}${r.unpaired ? ` (${r.unpaired} unpaired items left out)` : ''}`,
    `accuracy: ${labels[0]} ${pct(r.accA)}, ${labels[1]} ${pct(r.accB)} (Δ ${(100 * (r.accB - r.accA)).toFixed(2)} points)`,
    `right in both ${r.both}, ${labels[0]} only ${r.onlyA}, ${labels[1]} only ${r.onlyB}, neither ${r.neither}`,
    `exact McNemar two-sided p = ${r.pValue.toPrecision(3)} (${r.pValue < 0.05 ? 'a significant difference' : 'no significant difference'} at 0.05)`,
    `finish_reason differs on ${r.finishDiffers} items`,
  ].join('\n');
}
