/**
 * Seed 002's bug class, as one rule: with shared-experts fusion on, every captured row of a
 * MoE layer must hold K distinct routed ids below E, then exactly one shared id E (column K).
 * Returns the number of rows (over all layers) that break it; a layer of the wrong width
 * counts all its rows as bad.
 */
export function badFusionRows(
  routedExperts: Readonly<Record<string, Int32Array>>,
  numTokens: number,
  K: number,
  E: number,
): number {
  let bad = 0;
  for (const rows of Object.values(routedExperts)) {
    if (rows.length !== numTokens * (K + 1)) {
      bad += numTokens;
      continue;
    }
    for (let t = 0; t < numTokens; t++) {
      const row = Array.from(rows.subarray(t * (K + 1), (t + 1) * (K + 1)));
      const routed = row.filter((e) => e < E);
      if (new Set(routed).size !== K || row.filter((e) => e === E).length !== 1 || row[K] !== E)
        bad++;
    }
  }
  return bad;
}
