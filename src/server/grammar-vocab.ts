import type { GrammarVocab } from '../engine/grammar/grammar-service.js';
import { BYTE_TO_CHAR } from '../tokenizer/byte-level.js';
import { M3_TOKENS } from '../tokenizer/minimax-m3-tokens.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';

/**
 * xgrammar's view of a byte-level BPE vocabulary, padded to the model's V: every token as the
 * byte-level spelling of the exact bytes it decodes to (added tokens included, so markers such
 * as `]<]minimax[>[` match their text), special tokens other than the stop tokens blanked so a
 * grammar never emits a turn marker, and the think markers when they are single tokens.
 * Tokens holding a byte that never occurs in UTF-8 (C0, C1, F5–FF) are blanked as well:
 * xgrammar's character classes accept such lead bytes, and the text would decode to U+FFFD.
 */
export function grammarVocab(
  tok: Tokenizer,
  vocabSize: number,
  stopTokenIds: readonly number[],
): GrammarVocab {
  const stops = new Set(stopTokenIds);
  const encodedVocab: string[] = [];
  for (let id = 0; id < Math.min(tok.vocabSize, vocabSize); id++) {
    const bytes = tok.specialIds.has(id) && !stops.has(id) ? undefined : tok.tokenBytes(id);
    const usable = bytes !== undefined && !bytes.some(neverInUtf8);
    encodedVocab.push(usable ? Array.from(bytes, (b) => BYTE_TO_CHAR[b]!).join('') : '');
  }
  const open = tok.tokenToId(M3_TOKENS.thinkOpen);
  const close = tok.tokenToId(M3_TOKENS.thinkClose);
  const think = open !== undefined && close !== undefined ? { open, close } : undefined;
  return { encodedVocab, vocabSize, stopTokenIds, ...(think ? { think } : {}) };
}

function neverInUtf8(b: number): boolean {
  return b === 0xc0 || b === 0xc1 || b >= 0xf5;
}
