/**
 * GSM8K answer handling. The two filters and the exact-match normalisation follow
 * lm-evaluation-harness gsm8k.yaml v3 (serving-anchors §3).
 */

export const INVALID = '[invalid]';

const STRICT = /#### (-?[0-9.,]+)/g;
const FLEXIBLE = /(-?[$0-9.,]{2,})|(-?[0-9]+)/g;

/** strict-match: the first `#### <number>`. */
export function strictMatch(response: string): string {
  const first = [...response.matchAll(STRICT)][0];
  return first?.[1]?.trim() ?? INVALID;
}

/** flexible-extract: the last number-like match anywhere in the response. */
export function flexibleExtract(response: string): string {
  const all = [...response.matchAll(FLEXIBLE)];
  const last = all[all.length - 1];
  if (!last) return INVALID;
  return (last[1] || last[2] || INVALID).trim();
}

/** exact_match with ignore_case and regexes_to_ignore [",", "\$", "(?s).*#### ", "\.$"]. */
export function normalizeForMatch(s: string): string {
  return s
    .replace(/,/g, '')
    .replace(/\$/g, '')
    .replace(/[\s\S]*#### /g, '')
    .replace(/\.$/, '')
    .toLowerCase();
}

export function exactMatch(prediction: string, reference: string): boolean {
  return normalizeForMatch(prediction) === normalizeForMatch(reference);
}

/** The reference number of a GSM8K `answer` field (the text after `#### `). */
export function goldAnswer(answerField: string): string {
  return normalizeForMatch(answerField).trim();
}

/** Stop-rate scoring: `#### N` if present, else the last number; compared numerically. */
export function extractAnswer(response: string): string {
  const strict = strictMatch(response);
  return strict !== INVALID ? strict : flexibleExtract(response);
}

export function answersEqual(prediction: string, gold: string): boolean {
  const p = normalizeForMatch(prediction).trim();
  const g = normalizeForMatch(gold).trim();
  if (p === g) return true;
  const pn = Number(p);
  const gn = Number(g);
  return p !== '' && g !== '' && Number.isFinite(pn) && Number.isFinite(gn) && pn === gn;
}
