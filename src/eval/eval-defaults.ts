import { fileURLToPath } from 'node:url';
import { BUNDLED_MODEL_NAME } from '../config/bundled-model.js';
import { DEFAULT_GSM8K_TEST } from './gsm8k-dataset.js';

export { BUNDLED_MODEL_NAME };

/**
 * The bundled model's 500 held-out arithmetic problems in GSM8K's format (`gen-data --seed
 * 20261129 --num-heldout 500`, file heldout-gsm8k.jsonl; a test regenerates and compares it).
 * Real GSM8K is beyond a 5.8 M-parameter model (0 of 20); these show what it learned.
 */
export const TINY_HELDOUT_GSM8K = fileURLToPath(
  new URL('../../data/tiny-m3/heldout-gsm8k.jsonl', import.meta.url),
);

/** The default dataset of `eval stop-rate` / `eval gsm8k` for the served model. */
export function defaultGsm8kDataset(model: string): string {
  return model === BUNDLED_MODEL_NAME ? TINY_HELDOUT_GSM8K : DEFAULT_GSM8K_TEST;
}
