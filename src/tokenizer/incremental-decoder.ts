import type { Tokenizer } from './tokenizer.js';

/** Options for {@link IncrementalDecoder}. */
export interface IncrementalDecoderOptions {
  /** Drop special tokens (see {@link Tokenizer.specialIds}). Defaults to false. */
  skipSpecialTokens?: boolean;
  /**
   * Special ids rendered even when skipping special tokens: the output parsers need markers
   * like `<mm:think>` in the text when a tokenizer flags them special.
   */
  keepIds?: ReadonlySet<number>;
}

/**
 * Turns a stream of token ids into text deltas. Bytes of an unfinished UTF-8 character are
 * held back until the token that completes it arrives, so a delta never ends mid-character;
 * bytes that can never form a character come out as U+FFFD, exactly as in a one-shot decode.
 *
 * Invariant: the concatenation of every `feed` result and the final `flush` equals
 * `tokenizer.decode(allIds, { skipSpecialTokens })`.
 */
export class IncrementalDecoder {
  private readonly utf8 = new TextDecoder('utf-8');

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly opts: IncrementalDecoderOptions = {},
  ) {}

  /** Text completed by these ids (possibly ''). */
  feed(ids: readonly number[]): string {
    let out = '';
    for (const id of ids) {
      if (this.skips(id)) continue;
      const bytes = this.tokenizer.tokenBytes(id);
      if (bytes) out += this.utf8.decode(bytes, { stream: true });
    }
    return out;
  }

  /** Whatever is still held back, once no more ids will come (U+FFFD for a cut character). */
  flush(): string {
    return this.utf8.decode();
  }

  private skips(id: number): boolean {
    const { skipSpecialTokens, keepIds } = this.opts;
    return !!skipSpecialTokens && this.tokenizer.specialIds.has(id) && !keepIds?.has(id);
  }
}
