import type { ForwardBatch } from '../backend/forward-batch.js';
import type { ForwardModel } from './forward-model.js';
import { singleSequenceCache } from './run-forward.js';

export interface GenerateOptions {
  readonly maxTokens: number;
  readonly eosTokenIds: readonly number[];
  /** Picks the next token from one row of V logits. */
  readonly pick: (logits: Float32Array) => number;
  /** Tokens per prefill step (chunked prefill); default: the whole prompt at once. */
  readonly prefillChunk?: number;
}

export interface GeneratedToken {
  readonly tokenId: number;
  /** The logits the token was picked from. */
  readonly logits: Float32Array;
}

/**
 * Decodes one sequence token by token through the paged KV cache: the prompt is prefilled
 * (optionally in chunks), then each step feeds the last token at its position.
 */
export async function* generateTokens(
  model: ForwardModel,
  promptIds: readonly number[],
  o: GenerateOptions,
): AsyncGenerator<GeneratedToken> {
  if (promptIds.length === 0) throw new Error('generate: the prompt is empty');
  const { kv, pageTable } = singleSequenceCache(model, promptIds.length + o.maxTokens);
  const step = async (ids: readonly number[], numCached: number): Promise<Float32Array> => {
    const batch: ForwardBatch = {
      tokenIds: Int32Array.from(ids),
      seqs: [{ numCached, numNew: ids.length, pageTable }],
      pageSize: kv.pageSize,
      logitsFor: 'last',
    };
    return (await model.forward(batch, kv)).logits;
  };
  const chunk = o.prefillChunk ?? promptIds.length;
  let logits: Float32Array = new Float32Array(0);
  for (let start = 0; start < promptIds.length; start += chunk) {
    logits = await step(promptIds.slice(start, start + chunk), start);
  }
  let pos = promptIds.length;
  for (let n = 0; n < o.maxTokens; n++) {
    const tokenId = o.pick(logits);
    yield { tokenId, logits };
    if (o.eosTokenIds.includes(tokenId) || n + 1 === o.maxTokens) return;
    logits = await step([tokenId], pos++);
  }
}

export function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  return best;
}
