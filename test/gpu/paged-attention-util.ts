/** Batches over a shuffled paged KV cache and per-row errors, shared by the attention checks. */
import type { ForwardBatch } from '../../src/backend/forward-batch.js';
import { relErr, type Row } from './check-util.js';

export type SeqSpec = readonly { numCached: number; numNew: number }[];

/** Pages of S slots handed out in a shuffled order over P pages (37 is coprime with P). */
export function pagedBatch(spec: SeqSpec, P: number, S: number, what: string): ForwardBatch {
  let next = 0;
  const seqs = spec.map((s) => {
    const pages = Math.ceil((s.numCached + s.numNew) / S);
    const pageTable = Int32Array.from({ length: pages }, () => (next++ * 37 + 5) % P);
    return { ...s, pageTable };
  });
  if (next > P) throw new Error(`${what}: ${next} pages, only ${P}`);
  const T = spec.reduce((n, s) => n + s.numNew, 0);
  return { tokenIds: new Int32Array(T), seqs, pageSize: S, logitsFor: 'last' };
}

/** The worst (token, head) row's ‖Δ‖/‖ref‖: a wrong tile edge cannot hide in the total. */
export function worstRow(a: Float32Array, b: Float32Array, Dh: number): number {
  let worst = 0;
  for (let r = 0; r < b.length / Dh; r++)
    worst = Math.max(
      worst,
      relErr(a.subarray(r * Dh, (r + 1) * Dh), b.subarray(r * Dh, (r + 1) * Dh)),
    );
  return worst;
}

export function errRow(check: string, err: number, limit: number): Row {
  return { check, value: err.toExponential(2), limit: limit.toExponential(0), pass: err <= limit };
}
