import type { BenchRequest } from './bench-dataset.js';
import type { SeededRng } from './seeded-rng.js';
import { randomWords } from './word-generator.js';

export interface SharedPrefixOptions {
  numGroups: number;
  promptsPerGroup: number;
  systemPromptLen: number;
  questionLen: number;
  outputLen: number;
}

/**
 * SGLang's generated-shared-prefix workload: each group shares one long system prefix and
 * every prompt appends its own question. Requests are shuffled so groups interleave.
 */
export function sharedPrefixDataset(opts: SharedPrefixOptions, rng: SeededRng): BenchRequest[] {
  const out: BenchRequest[] = [];
  for (let g = 0; g < opts.numGroups; g++) {
    const system = randomWords(rng, opts.systemPromptLen);
    for (let p = 0; p < opts.promptsPerGroup; p++) {
      const question = randomWords(rng, opts.questionLen);
      out.push({
        prompt: `${system}\n\n${question}`,
        promptLen: opts.systemPromptLen + opts.questionLen,
        outputLen: opts.outputLen,
      });
    }
  }
  return rng.shuffle(out);
}
