import type { Backend, BatchMeta, NormRopeCacheArgs } from './backend.js';

/**
 * Backend.normRopeCache's definition as the separate ops: what a backend without the fused op
 * runs, and what the fused op is checked against.
 */
export function normRopeCacheSteps(b: Backend, a: NormRopeCacheArgs, meta: BatchMeta): void {
  const rope = { headDim: a.headDim, rotaryDim: a.rotaryDim, theta: a.theta };
  b.rmsNorm(a.q, a.q, a.qNorm, a.eps);
  b.rmsNorm(a.k, a.k, a.kNorm, a.eps);
  b.rope(a.q, meta, { numHeads: a.numQHeads, ...rope });
  b.rope(a.k, meta, { numHeads: a.numKHeads, ...rope });
  b.writeCache(a.kCache, a.k, meta, a.kScale);
  if (a.v && a.vCache) b.writeCache(a.vCache, a.v, meta, a.vScale);
}

/** The fused op where the backend has it, else the steps. */
export function normRopeCache(b: Backend, a: NormRopeCacheArgs, meta: BatchMeta): void {
  if (b.normRopeCache) b.normRopeCache(a, meta);
  else normRopeCacheSteps(b, a, meta);
}
