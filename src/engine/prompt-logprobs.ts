import type { PromptTokenLogprob } from './engine-types.js';
import { logSumExp, topIndices } from './logits-processing.js';

/**
 * Collects the logprobs of one request's prompt tokens from the logits rows of its prefill
 * chunks: the row of position p scores prompt token p + 1. Positions already scored (before a
 * preemption recomputed them) are skipped, so each comes out once, in order.
 */
export class PromptLogprobCollector {
  private readonly entries: PromptTokenLogprob[] = [];

  constructor(
    private readonly promptIds: readonly number[],
    private readonly numTop: number,
  ) {}

  /** The next prompt position still to score. */
  private get next(): number {
    return this.entries.length + 1;
  }

  get done(): boolean {
    return this.next >= this.promptIds.length;
  }

  /** Whether a chunk at positions numCached .. numCached+numNew-1 scores a position still due. */
  wants(numCached: number, numNew: number): boolean {
    return !this.done && numCached + numNew >= this.next && numCached < this.next;
  }

  /** Takes the chunk's logits rows [numNew, V]. */
  add(numCached: number, numNew: number, rows: Float32Array, vocabSize: number): void {
    for (let j = 0; j < numNew; j++) {
      const target = numCached + j + 1;
      if (target !== this.next || this.done) continue;
      this.entries.push(this.score(rows.subarray(j * vocabSize, (j + 1) * vocabSize), target));
    }
  }

  result(): readonly PromptTokenLogprob[] {
    return this.entries;
  }

  /** Raw log-softmax of one row, at the prompt token of `position`. */
  private score(x: Float32Array, position: number): PromptTokenLogprob {
    const tokenId = this.promptIds[position]!;
    const lse = logSumExp(x);
    const v = x[tokenId]!;
    let rank = 1;
    for (let i = 0; i < x.length; i++) if (x[i]! > v) rank++;
    const top = topIndices(x, this.numTop).map((t) => ({ tokenId: t, logprob: x[t]! - lse }));
    return { tokenId, logprob: v - lse, rank, top };
  }
}
