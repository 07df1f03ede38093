/**
 * Exact (binomial) McNemar test for two evaluations of the same items: only the discordant
 * items count, b = right in A only and c = right in B only; under "no difference" each is
 * Binomial(b + c, 1/2). Two-sided p = min(1, 2·P[X ≤ min(b, c)]).
 */
export function mcnemarExactP(b: number, c: number): number {
  const n = b + c;
  if (n === 0) return 1;
  const k = Math.min(b, c);
  // Σ_{i≤k} C(n, i)·2^−n in log space, so n in the thousands does not overflow.
  let logC = 0; // log C(n, 0)
  let sum = 0;
  for (let i = 0; i <= k; i++) {
    if (i > 0) logC += Math.log(n - i + 1) - Math.log(i);
    sum += Math.exp(logC - n * Math.LN2);
  }
  return Math.min(1, 2 * sum);
}
