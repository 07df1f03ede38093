/** Batches over a shuffled paged KV cache and per-row errors, shared by the attention checks. */
import type { AttentionOptions, Backend } from '../../src/backend/backend.js';
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

/** Host inputs of one paged attention call: q [T, H·Dh]; k and v [P, S, Hkv·Dh]. */
export interface PagedInputs {
  readonly q: Float32Array;
  readonly k: Float32Array;
  readonly v: Float32Array;
}

/**
 * `be.attention` over `x` uploaded as bf16 (MSA-sparse over `blocks` [Hkv, T, topk] when given):
 * the output [T, H·Dh] read back as f32; every tensor it made is freed.
 */
export function runPagedAttention(
  be: Backend,
  batch: ForwardBatch,
  x: PagedInputs,
  opts: AttentionOptions,
  blocks: Int32Array | null = null,
): Float32Array {
  const T = batch.tokenIds.length;
  const { numHeads: H, numKvHeads: Hkv, headDim: Dh } = opts;
  const S = batch.pageSize;
  const P = x.k.length / (S * Hkv * Dh);
  const meta = be.prepareBatch(batch);
  const q = be.upload(x.q, [T, H * Dh], 'bf16');
  const k = be.upload(x.k, [P, S, Hkv * Dh], 'bf16');
  const v = be.upload(x.v, [P, S, Hkv * Dh], 'bf16');
  const o = be.alloc([T, H * Dh], 'bf16');
  const bt = blocks ? be.upload(blocks, [Hkv, T, blocks.length / (Hkv * T)], 'i32') : null;
  be.attention(o, q, k, v, meta, { ...opts, blocks: bt });
  const out = be.readF32(o);
  for (const t of [q, k, v, o, ...(bt ? [bt] : [])]) be.free(t);
  return out;
}
