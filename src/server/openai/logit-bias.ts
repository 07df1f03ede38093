import { describe, type FieldReader } from './field-reader.js';

/** OpenAI's bound on a bias; larger values are clamped to it (as OpenAI and vLLM do). */
const MAX_BIAS = 100;

/**
 * Reads `logit_bias`: `{"<token id>": bias}` → [id, bias] pairs, ids in [0, vocabSize), biases
 * clamped to [-100, 100]. undefined when absent or empty.
 */
export function readLogitBias(
  r: FieldReader,
  vocabSize: number,
): [tokenId: number, bias: number][] | undefined {
  const obj = r.object('logit_bias');
  if (obj === undefined) return undefined;
  const pairs: [number, number][] = [];
  for (const [key, value] of Object.entries(obj)) {
    const id = /^\d+$/.test(key) ? Number(key) : NaN;
    if (!Number.isSafeInteger(id) || id >= vocabSize)
      r.fail('logit_bias', `keys must be token ids in [0, ${vocabSize}), got "${key}"`);
    if (typeof value !== 'number' || !Number.isFinite(value))
      r.fail('logit_bias', `values must be numbers, got ${describe(value)} for token ${key}`);
    pairs.push([id, Math.max(-MAX_BIAS, Math.min(MAX_BIAS, value))]);
  }
  return pairs.length > 0 ? pairs : undefined;
}
