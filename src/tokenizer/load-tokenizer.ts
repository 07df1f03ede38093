import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { BpeTokenizer } from './bpe-tokenizer.js';
import type { Tokenizer } from './tokenizer.js';
import { readTokenizerConfig } from './tokenizer-config.js';

/**
 * Loads the tokenizer of a HuggingFace model directory: tokenizer.json (byte-level BPE), plus
 * any added tokens that only tokenizer_config.json's `added_tokens_decoder` declares.
 * Throws with the file name on a missing file or an unsupported tokenizer kind.
 */
export function loadTokenizer(modelDir: string): Tokenizer {
  const path = join(modelDir, 'tokenizer.json');
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read ${path}: ${(err as Error).message}`);
  }
  try {
    return new BpeTokenizer(json, readTokenizerConfig(modelDir).addedTokens);
  } catch (err) {
    throw new Error(`${path}: ${(err as Error).message}`);
  }
}
