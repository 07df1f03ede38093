import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { parserMarkerIds } from '../tokenizer/minimax-m3-tokens.js';
import type { BenchRequest } from './bench-dataset.js';
import { lengthRange, type RandomDatasetOptions } from './random-dataset.js';
import type { SeededRng } from './seeded-rng.js';

/** What the random dataset needs of the model's tokenizer (loaded locally, as SGLang does). */
export type PromptTokenizer = Pick<
  Tokenizer,
  'vocabSize' | 'specialIds' | 'encode' | 'decode' | 'tokenBytes' | 'tokenToId'
>;

// Re-encoding a decoded random sequence rarely gives back its length at once (byte-level
// tokens merge across the joins, invalid UTF-8 decodes to U+FFFD): a few rounds of
// truncating or topping up converge.
const MAX_ROUNDS = 16;

/**
 * SGLang's and vLLM's random dataset, exact in tokens: each prompt is `promptLen` random token
 * ids of the model's vocabulary (special tokens and the M3 parser markers left out), decoded to
 * text, then re-encoded and truncated or topped up with more random ids until the text encodes
 * (without special tokens) to exactly `promptLen` tokens, as vLLM's
 * `gen_prompt_decode_to_target_len` does. Lengths follow the range-ratio convention. A prompt
 * that does not converge keeps its closest length, reported as its `promptLen`.
 */
export function randomTokenDataset(
  opts: RandomDatasetOptions,
  rng: SeededRng,
  tokenizer: PromptTokenizer,
): BenchRequest[] {
  const [inLo, inHi] = lengthRange(opts.inputLen, opts.rangeRatio, opts.convention);
  const [outLo, outHi] = lengthRange(opts.outputLen, opts.rangeRatio, opts.convention);
  const allowed = promptTokenIds(tokenizer);
  const out: BenchRequest[] = [];
  for (let i = 0; i < opts.numPrompts; i++) {
    const target = rng.int(inLo, inHi);
    const outputLen = rng.int(outLo, outHi);
    out.push({ ...promptOfLength(target, allowed, rng, tokenizer), outputLen });
  }
  return out;
}

/**
 * The ids a random prompt may use: every vocabulary id but special and parser-marker ones, and
 * but byte-level pieces of a character (alone they decode to U+FFFD, whose re-encoding is
 * longer and keeps the length from converging).
 */
export function promptTokenIds(tokenizer: PromptTokenizer): number[] {
  const excluded = new Set([...tokenizer.specialIds, ...parserMarkerIds(tokenizer)]);
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const whole = (bytes: Uint8Array | undefined): boolean => {
    if (!bytes || bytes.length === 0) return false;
    try {
      utf8.decode(bytes);
      return true;
    } catch {
      return false;
    }
  };
  const ids: number[] = [];
  for (let id = 0; id < tokenizer.vocabSize; id++)
    if (!excluded.has(id) && whole(tokenizer.tokenBytes(id))) ids.push(id);
  if (ids.length === 0) throw new Error('the tokenizer has no ordinary tokens to draw from');
  return ids;
}

function promptOfLength(
  target: number,
  allowed: readonly number[],
  rng: SeededRng,
  tokenizer: PromptTokenizer,
): { prompt: string; promptLen: number } {
  const draw = (n: number) =>
    Array.from({ length: n }, () => allowed[rng.int(0, allowed.length - 1)]!);
  let ids = draw(target);
  let best = { prompt: '', promptLen: 0, miss: Infinity };
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const prompt = tokenizer.decode(ids);
    const encoded = tokenizer.encode(prompt, { addSpecialTokens: false });
    const miss = Math.abs(encoded.length - target);
    if (miss < best.miss) best = { prompt, promptLen: encoded.length, miss };
    if (miss === 0) break;
    ids =
      encoded.length > target
        ? encoded.slice(0, target)
        : [...encoded, ...draw(target - encoded.length)];
  }
  return { prompt: best.prompt, promptLen: best.promptLen };
}
