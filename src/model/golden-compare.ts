/** The pass rule of shared/golden/README.md, reusable by tests and GPU check scripts. */
export interface GoldenExpect {
  readonly ids: readonly number[];
  readonly logits: readonly (readonly number[])[];
  readonly routed_experts: Readonly<Record<string, readonly (readonly number[])[]>>;
}

export interface GoldenReport {
  readonly pass: boolean;
  readonly maxAbsDiff: number;
  readonly tolerance: number;
  readonly argmaxMismatches: number;
  readonly routeMismatches: number;
  readonly problems: string[];
}

function argmax(row: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  return best;
}

export function compareGolden(
  expect: GoldenExpect,
  got: {
    logits: readonly (readonly number[])[];
    routedExperts: Readonly<Record<string, readonly (readonly number[])[]>>;
  },
): GoldenReport {
  const problems: string[] = [];
  let maxExp = 0;
  let maxAbsDiff = 0;
  let argmaxMismatches = 0;
  if (got.logits.length !== expect.logits.length)
    problems.push(`${got.logits.length} logit rows, expected ${expect.logits.length}`);
  expect.logits.forEach((row, t) => {
    const g = got.logits[t] ?? [];
    if (g.length !== row.length)
      problems.push(`row ${t}: ${g.length} logits, expected ${row.length}`);
    row.forEach((v, j) => {
      maxExp = Math.max(maxExp, Math.abs(v));
      maxAbsDiff = Math.max(
        maxAbsDiff,
        Math.abs((g[j] ?? NaN) - v) || (Number.isNaN(g[j]) ? Infinity : 0),
      );
    });
    if (argmax(g) !== argmax(row)) argmaxMismatches++;
  });
  const tolerance = 2e-3 * Math.max(1, maxExp);
  if (maxAbsDiff > tolerance)
    problems.push(`max |Δlogit| ${maxAbsDiff.toExponential(3)} > ${tolerance.toExponential(3)}`);
  if (argmaxMismatches > 0) problems.push(`argmax differs at ${argmaxMismatches} positions`);
  let routeMismatches = 0;
  const expLayers = Object.keys(expect.routed_experts).sort();
  const gotLayers = Object.keys(got.routedExperts).sort();
  if (expLayers.join(',') !== gotLayers.join(','))
    problems.push(`MoE layers [${gotLayers}] expected [${expLayers}]`);
  for (const layer of expLayers) {
    (expect.routed_experts[layer] ?? []).forEach((row, t) => {
      const g = [...(got.routedExperts[layer]?.[t] ?? [])].sort((a, b) => a - b);
      if (g.join(',') !== [...row].sort((a, b) => a - b).join(',')) routeMismatches++;
    });
  }
  if (routeMismatches > 0) problems.push(`${routeMismatches} routed-expert rows differ`);
  return {
    pass: problems.length === 0,
    maxAbsDiff,
    tolerance,
    argmaxMismatches,
    routeMismatches,
    problems,
  };
}
