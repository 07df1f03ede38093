/** Options for {@link Tokenizer.encode}. */
export interface EncodeOptions {
  /**
   * Run the tokenizer.json post-processor (e.g. prepend BOS). Defaults to true, as in HF
   * `tokenizers`. Chat prompts already carry every marker, so render paths pass false.
   */
  addSpecialTokens?: boolean;
  /**
   * Match special added tokens (BOS, turn markers, ...) in the text. Defaults to true; false
   * tokenizes their strings as plain text (HF's `split_special_tokens=True`), which is how
   * user-supplied text must be read so that it cannot forge the chat format's markers.
   */
  parseSpecialTokens?: boolean;
}

/** Options for {@link Tokenizer.decode}. */
export interface DecodeOptions {
  /** Drop tokens whose `added_tokens` entry is flagged `special`. Defaults to false. */
  skipSpecialTokens?: boolean;
}

/**
 * Text <-> token ids for one model. Implementations are immutable after loading and safe to
 * share between requests.
 *
 * Contract:
 * - `decode(encode(t, { addSpecialTokens: false })) === t` for any text whose normalizer is
 *   the identity on it (byte-level BPE loses nothing).
 * - Added tokens (`added_tokens` in tokenizer.json) are matched in the raw text first, longest
 *   match wins, and are never split by BPE.
 * - `decode` never throws on ids; unknown ids decode to nothing, invalid UTF-8 to U+FFFD.
 */
export interface Tokenizer {
  /** One past the largest id, i.e. the size the embedding table must have at least. */
  readonly vocabSize: number;
  /** Ids of added tokens flagged `special` (BOS, EOS, turn markers, ...). */
  readonly specialIds: ReadonlySet<number>;
  encode(text: string, o?: EncodeOptions): number[];
  /**
   * The same ids as `encode`, giving the event loop a turn every few milliseconds of work: a
   * server tokenizes megabyte prompts with it so that other requests are not held up.
   */
  encodeAsync(text: string, o?: EncodeOptions): Promise<number[]>;
  /**
   * An upper bound on the UTF-16 code units one token can cover, so that
   * `text.length / maxCharsPerToken` is a lower bound on its token count (an over-long input
   * can be refused before tokenizing it); null when no such bound holds.
   */
  readonly maxCharsPerToken: number | null;
  decode(ids: readonly number[], o?: DecodeOptions): string;
  /** Id of a vocabulary or added token given in its stored form (byte-level chars for BPE). */
  tokenToId(token: string): number | undefined;
  /** Stored form of a token (e.g. `Ġthe`), or undefined for an unknown id. */
  idToToken(id: number): string | undefined;
  /**
   * The raw bytes a token contributes to decoded text (UTF-8 of the content for added tokens).
   * Incremental decoding is built on this, so a token may hold part of a character.
   */
  tokenBytes(id: number): Uint8Array | undefined;
}
