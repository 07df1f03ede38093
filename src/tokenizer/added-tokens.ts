/** One `added_tokens` entry of tokenizer.json. */
export interface AddedToken {
  id: number;
  content: string;
  special: boolean;
  singleWord?: boolean;
  lstrip?: boolean;
  rstrip?: boolean;
}

/** A piece of input text: plain text for the BPE pipeline, or a matched added token. */
export type Segment = { text: string } | { id: number };

/**
 * Finds added tokens in raw text before any normalization or BPE, leftmost then longest
 * match first (HF's AddedVocabulary semantics, including lstrip/rstrip/single_word).
 */
export class AddedTokenMatcher {
  private readonly byFirstChar = new Map<string, AddedToken[]>();

  constructor(tokens: readonly AddedToken[]) {
    for (const t of tokens) {
      if (t.content.length === 0) continue;
      const first = t.content[0]!;
      const list = this.byFirstChar.get(first) ?? [];
      list.push(t);
      this.byFirstChar.set(first, list);
    }
    for (const list of this.byFirstChar.values()) {
      list.sort((a, b) => b.content.length - a.content.length);
    }
  }

  split(text: string): Segment[] {
    const out: Segment[] = [];
    let textStart = 0;
    for (let i = 0; i < text.length;) {
      const tok = this.matchAt(text, i);
      if (!tok) {
        i++;
        continue;
      }
      let before = text.slice(textStart, i);
      if (tok.lstrip) before = before.trimEnd();
      if (before) out.push({ text: before });
      out.push({ id: tok.id });
      i += tok.content.length;
      if (tok.rstrip) while (i < text.length && /\s/u.test(text[i]!)) i++;
      textStart = i;
    }
    if (textStart < text.length) out.push({ text: text.slice(textStart) });
    return out;
  }

  private matchAt(text: string, i: number): AddedToken | undefined {
    const candidates = this.byFirstChar.get(text[i]!);
    if (!candidates) return undefined;
    return candidates.find(
      (t) =>
        text.startsWith(t.content, i) &&
        (!t.singleWord || isWordBoundary(text, i, i + t.content.length)),
    );
  }
}

function isWordBoundary(text: string, start: number, end: number): boolean {
  const word = /[\p{L}\p{N}_]/u;
  return !word.test(text[start - 1] ?? '') && !word.test(text[end] ?? '');
}
