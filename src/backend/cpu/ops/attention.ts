import type { BatchLayout, ForwardBatch } from '../../forward-batch.js';
import { e4m3RoundTrip } from '../../kv-scale.js';
import { dot } from './matmul.js';

export interface PagedAttentionArgs {
  readonly out: Float32Array; // [T, H*Dh]
  readonly q: Float32Array; // [T, H*Dh]
  readonly k: Float32Array; // [P, S, Hkv*Dh]
  readonly v: Float32Array; // [P, S, Hkv*Dh]
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly scale: number;
  /** [Hkv, T, topk] selected block ids (−1 unused), or null for dense causal attention. */
  readonly blocks: Int32Array | null;
  readonly topk: number;
}

/**
 * Scatters rows of x [T, W] into cache [P, S, W] at each token's slot; with `fp8Scale`, each
 * value's E4M3 round trip (e4m3RoundTrip: what an FP8 cache holds).
 */
export function writeCacheRows(
  cache: Float32Array,
  x: Float32Array,
  slots: Int32Array,
  width: number,
  fp8Scale: number | null = null,
): void {
  for (let t = 0; t < slots.length; t++) {
    const row = x.subarray(t * width, (t + 1) * width);
    const at = slots[t]! * width;
    if (fp8Scale === null) cache.set(row, at);
    else for (let d = 0; d < width; d++) cache[at + d] = e4m3RoundTrip(row[d]!, fp8Scale);
  }
}

/** The cache slots token t may attend to (positions 0..pos, optionally only listed blocks). */
function visibleSlots(
  pos: number,
  pageTable: Int32Array,
  S: number,
  blockList: Int32Array | null,
): number[] {
  const slots: number[] = [];
  const addBlock = (b: number): void => {
    const end = Math.min(pos, b * S + S - 1);
    for (let j = b * S; j <= end; j++) slots.push(pageTable[b]! * S + (j % S));
  };
  if (blockList === null) {
    for (let b = 0; b <= Math.floor(pos / S); b++) addBlock(b);
  } else {
    const sorted = Array.from(blockList)
      .filter((b) => b >= 0)
      .sort((a, b) => a - b);
    for (const b of sorted) addBlock(b);
  }
  return slots;
}

/** Causal GQA softmax attention over a paged KV cache (float64 accumulation). */
export function pagedAttention(
  a: PagedAttentionArgs,
  batch: ForwardBatch,
  layout: BatchLayout,
): void {
  const { numHeads: H, numKvHeads: Hkv, headDim: Dh } = a;
  const group = H / Hkv;
  const kvWidth = Hkv * Dh;
  const T = layout.numTokens;
  const acc = new Float64Array(Dh);
  for (let t = 0; t < T; t++) {
    const seq = batch.seqs[layout.seqOfToken[t]!]!;
    const pos = layout.positions[t]!;
    let dense: number[] | null = null;
    for (let g = 0; g < Hkv; g++) {
      const blockList = a.blocks
        ? a.blocks.subarray((g * T + t) * a.topk, (g * T + t + 1) * a.topk)
        : null;
      const slots = blockList
        ? visibleSlots(pos, seq.pageTable, batch.pageSize, blockList)
        : (dense ??= visibleSlots(pos, seq.pageTable, batch.pageSize, null));
      const scores = new Float64Array(slots.length);
      for (let hh = 0; hh < group; hh++) {
        const h = g * group + hh;
        const qOff = (t * H + h) * Dh;
        let max = -Infinity;
        for (let i = 0; i < slots.length; i++) {
          const s = dot(a.q, qOff, a.k, slots[i]! * kvWidth + g * Dh, Dh) * a.scale;
          scores[i] = s;
          if (s > max) max = s;
        }
        acc.fill(0);
        let denom = 0;
        for (let i = 0; i < slots.length; i++) {
          const p = Math.exp(scores[i]! - max);
          denom += p;
          const vOff = slots[i]! * kvWidth + g * Dh;
          for (let d = 0; d < Dh; d++) acc[d] = acc[d]! + p * a.v[vOff + d]!;
        }
        for (let d = 0; d < Dh; d++) a.out[qOff + d] = acc[d]! / denom;
      }
    }
  }
}
