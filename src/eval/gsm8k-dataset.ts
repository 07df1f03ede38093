import { fileURLToPath } from 'node:url';
import { readJsonl } from './jsonl.js';

/** One GSM8K line: `answer` ends with `#### N`. */
export interface Gsm8kItem {
  question: string;
  answer: string;
}

/**
 * GSM8K as bundled with the package (data/gsm8k, MIT, LICENSE beside it). Resolved from this
 * module, so the defaults work from any working directory, in src/ (tsx) and in dist/ alike.
 */
export const BUNDLED_GSM8K_DIR = fileURLToPath(new URL('../../data/gsm8k', import.meta.url));
export const DEFAULT_GSM8K_TEST = `${BUNDLED_GSM8K_DIR}/test.jsonl`;
export const DEFAULT_GSM8K_TRAIN = `${BUNDLED_GSM8K_DIR}/train-first200.jsonl`;

/** The first `limit` items (all when undefined) of a GSM8K-style JSONL file. */
export function loadGsm8k(path: string, limit?: number): Gsm8kItem[] {
  const items = readJsonl<Partial<Gsm8kItem>>(path);
  if (items.length === 0) throw new Error(`${path}: no GSM8K items (missing or empty file)`);
  const out = items.slice(0, limit ?? items.length);
  out.forEach((it, i) => {
    if (typeof it.question !== 'string' || typeof it.answer !== 'string')
      throw new Error(`${path}: line ${i + 1} lacks string "question" and "answer"`);
  });
  return out as Gsm8kItem[];
}
