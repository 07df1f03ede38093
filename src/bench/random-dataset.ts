import type { BenchRequest } from './bench-dataset.js';
import type { SeededRng } from './seeded-rng.js';
import { randomWords } from './word-generator.js';

/**
 * What `--random-range-ratio r` means (serving-anchors §2.1):
 * - `sglang`: uniform integers in [max(1, ⌊len·r⌋), len]; r = 0 gives [1, len], r = 1 pins len.
 * - `vllm`: uniform integers in [⌊len·(1−r)⌋, ⌈len·(1+r)⌉] with r in [0, 1); r = 0 pins len.
 */
export type RangeRatioConvention = 'sglang' | 'vllm';

export function lengthRange(
  len: number,
  ratio: number,
  convention: RangeRatioConvention,
): [number, number] {
  if (convention === 'sglang') {
    if (ratio < 0 || ratio > 1) throw new RangeError('sglang range ratio must be in [0, 1]');
    return [Math.max(1, Math.floor(len * ratio)), Math.max(1, len)];
  }
  if (ratio < 0 || ratio >= 1) throw new RangeError('vllm range ratio must be in [0, 1)');
  return [Math.max(1, Math.floor(len * (1 - ratio))), Math.max(1, Math.ceil(len * (1 + ratio)))];
}

export interface RandomDatasetOptions {
  numPrompts: number;
  inputLen: number;
  outputLen: number;
  rangeRatio: number;
  convention: RangeRatioConvention;
}

/**
 * `--dataset-name random-words`: prompts of seeded random words whose counts follow the chosen
 * range-ratio convention. A word is about 2 tokens, so lengths are not tokens; `random`
 * (random-token-dataset.ts) is the dataset exact in tokens.
 */
export function randomWordsDataset(opts: RandomDatasetOptions, rng: SeededRng): BenchRequest[] {
  const [inLo, inHi] = lengthRange(opts.inputLen, opts.rangeRatio, opts.convention);
  const [outLo, outHi] = lengthRange(opts.outputLen, opts.rangeRatio, opts.convention);
  const out: BenchRequest[] = [];
  for (let i = 0; i < opts.numPrompts; i++) {
    const promptLen = rng.int(inLo, inHi);
    const outputLen = rng.int(outLo, outHi);
    out.push({ prompt: randomWords(rng, promptLen), promptLen, outputLen });
  }
  return out;
}
