import { readJsonl } from './jsonl.js';

/** One GSM8K line: `answer` ends with `#### N`. */
export interface Gsm8kItem {
  question: string;
  answer: string;
}

/** Defaults are relative to the repository root, where the shared checkout sits beside it. */
export const DEFAULT_GSM8K_TEST = '../shared/data/gsm8k/test.jsonl';
export const DEFAULT_GSM8K_TRAIN = '../shared/data/gsm8k/train-first200.jsonl';

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
