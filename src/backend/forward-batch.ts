/**
 * One forward step, described without tensors. Tokens are laid out sequence by sequence:
 * sequence s contributes `numNew` tokens at positions numCached .. numCached+numNew-1, and its
 * KV lives in the pages listed in `pageTable` (page p holds positions p*S .. p*S+S-1).
 */
export interface SeqInBatch {
  /** Tokens of this sequence already in the KV cache before this step. */
  readonly numCached: number;
  /** Tokens this step adds (prefill chunk, or 1 for decode). */
  readonly numNew: number;
  /** Page ids covering at least numCached + numNew positions. */
  readonly pageTable: Int32Array;
  /** Logits for every new token of this sequence (prompt logprobs), whatever `logitsFor` says. */
  readonly allLogits?: boolean;
}

export interface ForwardBatch {
  /** [T] token ids, T = Σ numNew. */
  readonly tokenIds: Int32Array;
  readonly seqs: readonly SeqInBatch[];
  /** Page size S of the KV cache (the MSA block size when the model has sparse layers). */
  readonly pageSize: number;
  /**
   * Which rows get logits: the last new token of each sequence (and every token of a sequence
   * with `allLogits`), or every token.
   */
  readonly logitsFor: 'last' | 'all';
  /** Return each MoE layer's routed expert ids per token. */
  readonly captureRoutedExperts?: boolean;
  /**
   * Page-table row length a backend must lay the tables out with (a CUDA graph captured for a
   * batch size fixes it; every table must fit). Default: the longest table of the batch.
   */
  readonly pageTableStride?: number;
}

/** Host-side per-token arrays every backend derives from a ForwardBatch the same way. */
export interface BatchLayout {
  readonly numTokens: number;
  /** [T] absolute position of each token. */
  readonly positions: Int32Array;
  /** [T] index into `seqs` of each token. */
  readonly seqOfToken: Int32Array;
  /** [T] KV slot (page * S + offset) each token writes. */
  readonly slots: Int32Array;
  /** Row indices that get logits. */
  readonly logitRows: Int32Array;
}

export function layoutBatch(batch: ForwardBatch): BatchLayout {
  const T = batch.tokenIds.length;
  const S = batch.pageSize;
  const positions = new Int32Array(T);
  const seqOfToken = new Int32Array(T);
  const slots = new Int32Array(T);
  const logitRows: number[] = [];
  let t = 0;
  batch.seqs.forEach((seq, s) => {
    if (seq.pageTable.length * S < seq.numCached + seq.numNew) {
      throw new Error(
        `batch: sequence ${s} needs ${seq.numCached + seq.numNew} slots, its page table has ${seq.pageTable.length} pages of ${S}`,
      );
    }
    for (let i = 0; i < seq.numNew; i++, t++) {
      const pos = seq.numCached + i;
      positions[t] = pos;
      seqOfToken[t] = s;
      slots[t] = seq.pageTable[Math.floor(pos / S)]! * S + (pos % S);
      if (batch.logitsFor === 'all' || seq.allLogits || i === seq.numNew - 1) logitRows.push(t);
    }
  });
  if (t !== T) throw new Error(`batch: tokenIds has ${T} tokens, sequences add up to ${t}`);
  return { numTokens: T, positions, seqOfToken, slots, logitRows: Int32Array.from(logitRows) };
}
