import type { ForwardBatch } from '../backend/forward-batch.js';
import type { ForwardModel } from './forward-model.js';
import { defaultPageSize, type KvCache } from './minimax-m3/kv-cache.js';

export interface ForwardResult {
  /** One row of V logits per input position. */
  readonly logits: number[][];
  /** MoE layer index -> one row of routed (non-shared) expert ids per position. */
  readonly routedExperts: Record<string, number[][]>;
}

/** A KV cache with contiguous pages for one sequence of up to `maxLen` tokens. */
export function singleSequenceCache(
  model: ForwardModel,
  maxLen: number,
): { kv: KvCache; pageTable: Int32Array } {
  const pageSize = defaultPageSize(model.cfg);
  const numPages = Math.max(1, Math.ceil(maxLen / pageSize));
  const kv = model.allocKv(numPages, pageSize);
  return { kv, pageTable: Int32Array.from({ length: numPages }, (_, i) => i) };
}

/** One sequence's whole prompt as a single prefill step (positions 0..T−1). */
export function prefillBatch(
  ids: readonly number[],
  pageTable: Int32Array,
  pageSize: number,
  logitsFor: ForwardBatch['logitsFor'],
  captureRoutedExperts = false,
): ForwardBatch {
  return {
    tokenIds: Int32Array.from(ids),
    seqs: [{ numCached: 0, numNew: ids.length, pageTable }],
    pageSize,
    logitsFor,
    captureRoutedExperts,
  };
}

/** Full causal forward over `ids` (positions 0..T−1) in one prefill step. */
export async function runForward(
  model: ForwardModel,
  ids: readonly number[],
): Promise<ForwardResult> {
  const { kv, pageTable } = singleSequenceCache(model, ids.length);
  const batch = prefillBatch(ids, pageTable, kv.pageSize, 'all', true);
  const out = await model.forward(batch, kv);
  const V = model.cfg.vocabSize;
  const K = model.cfg.numExpertsPerTok;
  const logits = Array.from({ length: out.numRows }, (_, r) =>
    Array.from(out.logits.subarray(r * V, (r + 1) * V)),
  );
  const routedExperts: Record<string, number[][]> = {};
  for (const [layer, ids2] of Object.entries(out.routedExperts)) {
    const width = ids2.length / ids.length;
    // Only the K routed experts are reported; a fused shared slot (column K) is dropped.
    routedExperts[layer] = Array.from({ length: ids.length }, (_, t) =>
      Array.from(ids2.subarray(t * width, t * width + K)),
    );
  }
  return { logits, routedExperts };
}
