import { onigToJsRegex } from './onig-regex.js';

/**
 * Splits normalized text into the words BPE merges within (raw text, not byte-level yet).
 * Lazy: words come as the regexes find them, so a caller can pause between them (a megabyte
 * prompt need not be split in one blocking pass) and still get exactly the eager result.
 */
export type PreTokenizer = (text: string) => Iterable<string>;

type SplitBehavior =
  'Removed' | 'Isolated' | 'MergedWithPrevious' | 'MergedWithNext' | 'Contiguous';

interface PreTokenizerConfig {
  type: string;
  pretokenizers?: PreTokenizerConfig[];
  pattern?: { Regex?: string; String?: string };
  behavior?: SplitBehavior;
  invert?: boolean;
  add_prefix_space?: boolean;
  use_regex?: boolean;
  individual_digits?: boolean;
}

/** GPT-2's split pattern, which the ByteLevel pre-tokenizer applies when `use_regex` is set. */
export const GPT2_PATTERN =
  "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/** One step of the pipeline: maps each piece to zero or more pieces. */
type Step = (piece: string) => Iterable<string>;

/**
 * Builds the pre-tokenizer of a tokenizer.json. Supports ByteLevel, Split (regex or string,
 * every behavior), Digits and Sequence of those. A ByteLevel step is required: this engine only
 * serves byte-level BPE vocabularies (the caller maps each word to byte-level characters).
 */
export function buildPreTokenizer(config: unknown): PreTokenizer {
  const steps: Step[] = [];
  let byteLevel = false;
  const add = (c: PreTokenizerConfig): void => {
    switch (c.type) {
      case 'Sequence':
        for (const inner of c.pretokenizers ?? []) add(inner);
        return;
      case 'ByteLevel':
        byteLevel = true;
        if (c.add_prefix_space) steps.push((p) => [p.startsWith(' ') ? p : ` ${p}`]);
        if (c.use_regex ?? true) steps.push(splitStep(onigToJsRegex(GPT2_PATTERN), 'Isolated'));
        return;
      case 'Split':
        steps.push(splitStep(splitRegex(c), c.behavior ?? 'Isolated', c.invert ?? false));
        return;
      case 'Digits':
        steps.push(splitStep(c.individual_digits ? /\p{N}/gu : /\p{N}+/gu, 'Isolated'));
        return;
      default:
        throw new Error(`unsupported pre-tokenizer: ${c.type}`);
    }
  };
  if (config) add(config as PreTokenizerConfig);
  if (!byteLevel)
    throw new Error('tokenizer.json has no ByteLevel pre-tokenizer (not byte-level BPE)');
  return (text) => pipeline(text, steps, 0);
}

/** Every step applied to each piece of the previous one, in order (a lazy flatMap chain). */
function* pipeline(piece: string, steps: readonly Step[], k: number): Generator<string> {
  if (k === steps.length) {
    yield piece;
    return;
  }
  for (const p of steps[k]!(piece)) yield* pipeline(p, steps, k + 1);
}

function splitRegex(c: PreTokenizerConfig): RegExp {
  if (c.pattern?.Regex !== undefined) return onigToJsRegex(c.pattern.Regex);
  if (c.pattern?.String !== undefined) {
    return new RegExp(c.pattern.String.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gu');
  }
  throw new Error('Split pre-tokenizer without a pattern');
}

interface Span {
  text: string;
  isMatch: boolean;
}

/** Cuts a piece at the regex's matches and regroups the spans as HF's SplitDelimiterBehavior. */
function splitStep(re: RegExp, behavior: SplitBehavior, invert = false): Step {
  if (behavior === 'Isolated') return (piece) => isolate(piece, re);
  return (piece) => {
    const spans = matchSpans(piece, re).map((s) => ({ ...s, isMatch: s.isMatch !== invert }));
    return regroup(spans, behavior);
  };
}

/** Isolated split (the common case, invert irrelevant): matches and the gaps between them. */
function* isolate(text: string, re: RegExp): Generator<string> {
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m[0].length === 0) continue;
    if (m.index > last) yield text.slice(last, m.index);
    yield m[0];
    last = m.index + m[0].length;
  }
  if (last < text.length) yield text.slice(last);
}

function matchSpans(text: string, re: RegExp): Span[] {
  const spans: Span[] = [];
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m[0].length === 0) continue;
    if (m.index > last) spans.push({ text: text.slice(last, m.index), isMatch: false });
    spans.push({ text: m[0], isMatch: true });
    last = m.index + m[0].length;
  }
  if (last < text.length) spans.push({ text: text.slice(last), isMatch: false });
  return spans;
}

function regroup(spans: Span[], behavior: SplitBehavior): string[] {
  const out: string[] = [];
  let carry = '';
  let prevMatch = false;
  for (const s of spans) {
    switch (behavior) {
      case 'Removed':
        if (!s.isMatch) out.push(s.text);
        break;
      case 'Isolated':
        out.push(s.text);
        break;
      case 'MergedWithPrevious':
        if (s.isMatch && out.length > 0) out[out.length - 1] += s.text;
        else out.push(s.text);
        break;
      case 'MergedWithNext':
        if (s.isMatch) carry += s.text;
        else {
          out.push(carry + s.text);
          carry = '';
        }
        break;
      case 'Contiguous':
        if (s.isMatch && prevMatch && out.length > 0) out[out.length - 1] += s.text;
        else out.push(s.text);
        break;
    }
    prevMatch = s.isMatch;
  }
  if (carry) out.push(carry);
  return out;
}
