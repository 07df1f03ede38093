/**
 * Compares the forward outputs that test/multi-gpu/tp-equivalence.sh wrote (one JSON per
 * layout, `moeserve forward` format) against the one-GPU output `tp1.json`: per layout the
 * worst per-position relative logit error ‖Δ‖/‖ref‖, argmax agreement and routed-expert rows
 * that differ. Usage: npx tsx test/multi-gpu/compare-layouts.ts DIR
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ForwardJson {
  logits: number[][];
  routed_experts: Record<string, number[][]>;
}

const argmax = (r: number[]): number => r.reduce((b, v, i) => (v > r[b]! ? i : b), 0);

function compare(
  ref: ForwardJson,
  got: ForwardJson,
): { relErr: number; argmaxDiff: number; routeDiff: number } {
  let relErr = 0;
  let argmaxDiff = 0;
  ref.logits.forEach((row, t) => {
    const g = got.logits[t]!;
    const num = Math.hypot(...row.map((v, j) => g[j]! - v));
    relErr = Math.max(relErr, num / Math.hypot(...row));
    if (argmax(g) !== argmax(row)) argmaxDiff++;
  });
  let routeDiff = 0;
  for (const [layer, rows] of Object.entries(ref.routed_experts)) {
    rows.forEach((r, t) => {
      const g = got.routed_experts[layer]?.[t] ?? [];
      if ([...r].sort().join() !== [...g].sort().join()) routeDiff++;
    });
  }
  return { relErr, argmaxDiff, routeDiff };
}

const dir = process.argv[2] ?? '.';
const read = (f: string): ForwardJson =>
  JSON.parse(readFileSync(join(dir, f), 'utf8')) as ForwardJson;
const ref = read('tp1.json');
console.log('layout            rel. logit error  argmax diffs  routed rows differing');
for (const f of readdirSync(dir)
  .filter((n) => n.endsWith('.json') && n !== 'tp1.json')
  .sort()) {
  const c = compare(ref, read(f));
  console.log(
    `${f.replace('.json', '').padEnd(17)} ${c.relErr.toExponential(2).padStart(16)} ${String(c.argmaxDiff).padStart(13)} ${String(c.routeDiff).padStart(22)}`,
  );
}
