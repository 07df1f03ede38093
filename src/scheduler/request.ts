import { pageHash } from '../kv-cache/prefix-cache.js';

export type RequestStatus = 'waiting' | 'running' | 'finished';

/**
 * One sequence as the scheduler sees it: token ids and KV bookkeeping, nothing about sampling
 * or tensors. Its tokens are the prompt followed by the outputs so far; after a preemption
 * all of them are recomputed as one (chunked) prefill.
 */
export class Request {
  readonly outputIds: number[] = [];
  status: RequestStatus = 'waiting';
  /** Page i holds the KV of positions i*S .. i*S+S-1. */
  pageIds: number[] = [];
  /** Leading tokens whose KV is in the cache (prefix hits included). */
  numComputed = 0;
  /** Leading pages that carry a prefix-cache label (set by this request or matched). */
  numLabelledPages = 0;
  /** Prompt tokens served from the prefix cache when first admitted. */
  numCachedPromptTokens = 0;
  numPreemptions = 0;
  /** Set on first admission; preemption and resume do not reset it. */
  admitted = false;
  private readonly hashes: string[] = [];

  /**
   * @param skipPrefixCache never start from cached pages: every prompt position is computed
   *   (prompt logprobs need the logits of each), as vLLM does for such requests. Its own full
   *   pages are still offered to the cache.
   */
  /**
   * Its consumer is not reading (its event buffer is full): it is neither scheduled nor
   * admitted until the consumer catches up.
   */
  paused = false;

  /**
   * @param group the client request this sequence belongs to (its choices share one), for the
   *   scheduler's fair share; by default its own id
   */
  constructor(
    readonly id: string,
    readonly promptIds: readonly number[],
    readonly skipPrefixCache = false,
    readonly group: string = id,
  ) {
    if (promptIds.length === 0) throw new Error(`request ${id}: empty prompt`);
  }

  get numTokens(): number {
    return this.promptIds.length + this.outputIds.length;
  }

  /** Tokens known but not yet in the KV cache (1 while decoding). */
  get numPending(): number {
    return this.numTokens - this.numComputed;
  }

  tokenAt(i: number): number {
    const p = this.promptIds.length;
    const t = i < p ? this.promptIds[i] : this.outputIds[i - p];
    if (t === undefined) throw new Error(`request ${this.id}: no token at ${i}`);
    return t;
  }

  /** Copies tokens [start, end) into `out` at `offset`. */
  copyTokens(start: number, end: number, out: Int32Array, offset: number): void {
    for (let i = start; i < end; i++) out[offset + i - start] = this.tokenAt(i);
  }

  /** Chained prefix hashes of the first `numPages` pages (which must be full). */
  pageHashes(numPages: number, pageSize: number): string[] {
    if (numPages * pageSize > this.numTokens) {
      throw new Error(`request ${this.id}: page ${numPages - 1} is not full`);
    }
    for (let i = this.hashes.length; i < numPages; i++) {
      const tokens = new Int32Array(pageSize);
      this.copyTokens(i * pageSize, (i + 1) * pageSize, tokens, 0);
      this.hashes.push(pageHash(this.hashes[i - 1] ?? null, tokens));
    }
    return this.hashes.slice(0, numPages);
  }
}
