import { performance } from 'node:perf_hooks';
import { AddedTokenMatcher, type AddedToken } from './added-tokens.js';
import { BpeModel } from './bpe-model.js';
import { byteLevelTokenBytes, toByteLevel } from './byte-level.js';
import { buildNormalizer, type Normalizer } from './normalizer.js';
import { buildPostProcessor, type PostProcessor } from './post-processor.js';
import { buildPreTokenizer, type PreTokenizer } from './pre-tokenizer.js';
import type { DecodeOptions, EncodeOptions, Tokenizer } from './tokenizer.js';

interface RawAddedToken {
  id: number;
  content: string;
  special?: boolean;
  single_word?: boolean;
  lstrip?: boolean;
  rstrip?: boolean;
}

interface TokenizerJson {
  added_tokens?: RawAddedToken[];
  normalizer?: unknown;
  pre_tokenizer?: unknown;
  post_processor?: unknown;
  decoder?: { type: string; decoders?: { type: string }[] } | null;
  model: {
    type?: string;
    vocab: Record<string, number>;
    merges: (string | [string, string])[];
    unk_token?: string | null;
    ignore_merges?: boolean;
    continuing_subword_prefix?: string | null;
    end_of_word_suffix?: string | null;
  };
}

/** Words longer than this are not cached. */
const MAX_CACHED_WORD_CHARS = 256;
/** The word cache's budget (estimated: UTF-16 key, ids, Map entry). */
const WORD_CACHE_BYTES = 16 * 2 ** 20;
const CACHE_ENTRY_OVERHEAD = 96;
/** encodeAsync gives the event loop a turn after this much work. */
const YIELD_AFTER_MS = 5;
/** Words of BPE between two points where encodeAsync may pause (a check of the clock). */
const WORDS_PER_STEP = 64;

/** Byte-level BPE tokenizer built from a HuggingFace tokenizer.json (GPT-2/Llama-3/Qwen family). */
export class BpeTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly specialIds: ReadonlySet<number>;
  private readonly vocab: Map<string, number>;
  private readonly idToTokenTable: (string | undefined)[] = [];
  private readonly added = new Map<number, AddedToken>();
  private readonly bytesCache: (Uint8Array | undefined)[] = [];
  private readonly matcher: AddedTokenMatcher;
  private readonly normalize: Normalizer;
  private readonly preTokenize: PreTokenizer;
  private readonly postProcess: PostProcessor;
  private readonly model: BpeModel;
  // Ids per pre-tokenized word: natural text repeats words, so most lookups hit. Bounded in
  // bytes, not entries: a few huge "words" must not fill the heap.
  private readonly wordCache = new Map<string, readonly number[]>();
  private wordCacheBytes = 0;
  private readonly nonSpecialMatcher: AddedTokenMatcher;
  readonly maxCharsPerToken: number | null;

  /**
   * @param json parsed tokenizer.json
   * @param extraAdded added tokens known only from tokenizer_config.json; ids already present
   *   in tokenizer.json keep their entry there
   */
  constructor(json: unknown, extraAdded: readonly AddedToken[] = []) {
    const j = validate(json);
    this.vocab = new Map(Object.entries(j.model.vocab));
    for (const [tok, id] of this.vocab) this.idToTokenTable[id] = tok;
    const addedTokens: AddedToken[] = (j.added_tokens ?? []).map((t) => ({
      id: t.id,
      content: t.content,
      special: t.special ?? false,
      singleWord: t.single_word ?? false,
      lstrip: t.lstrip ?? false,
      rstrip: t.rstrip ?? false,
    }));
    for (const t of [...addedTokens, ...extraAdded]) {
      if (this.added.has(t.id)) continue;
      this.added.set(t.id, t);
      this.idToTokenTable[t.id] = t.content;
    }
    this.specialIds = new Set([...this.added.values()].filter((t) => t.special).map((t) => t.id));
    this.vocabSize = this.idToTokenTable.length;
    this.matcher = new AddedTokenMatcher([...this.added.values()]);
    this.nonSpecialMatcher = new AddedTokenMatcher(
      [...this.added.values()].filter((t) => !t.special),
    );
    this.maxCharsPerToken = this.charsPerTokenBound(j.normalizer);
    this.normalize = buildNormalizer(j.normalizer);
    this.preTokenize = buildPreTokenizer(j.pre_tokenizer);
    this.postProcess = buildPostProcessor(j.post_processor);
    const unk = j.model.unk_token ? this.vocab.get(j.model.unk_token) : undefined;
    this.model = new BpeModel(this.vocab, j.model.merges.map(parseMerge), {
      ignoreMerges: j.model.ignore_merges ?? false,
      ...(unk === undefined ? {} : { unkId: unk }),
    });
  }

  encode(text: string, o: EncodeOptions = {}): number[] {
    const ids: number[] = [];
    const steps = this.encodeSteps(text, o, ids);
    while (!steps.next().done);
    return (o.addSpecialTokens ?? true) ? this.postProcess(ids) : ids;
  }

  /**
   * `encode` that gives the event loop a turn every {@link YIELD_AFTER_MS} of work. It drives
   * the same step generator as `encode` (only the pauses differ, and the word cache changes
   * speed, never ids), so the ids are identical by construction.
   */
  async encodeAsync(text: string, o: EncodeOptions = {}): Promise<number[]> {
    const ids: number[] = [];
    let since = performance.now();
    for (const _ of this.encodeSteps(text, o, ids)) {
      if (performance.now() - since < YIELD_AFTER_MS) continue;
      await new Promise<void>((resolve) => setImmediate(resolve));
      since = performance.now();
    }
    return (o.addSpecialTokens ?? true) ? this.postProcess(ids) : ids;
  }

  /**
   * The encode loop, appending to `ids` and pausing (yield) every {@link WORDS_PER_STEP}
   * words, where the caller may give the event loop a turn (the pre-tokenizer is lazy, so no
   * step scans the whole text; the added-token split and the normalizer still do, but they
   * are single fast passes).
   */
  private *encodeSteps(text: string, o: EncodeOptions, ids: number[]): Generator<void> {
    const matcher = (o.parseSpecialTokens ?? true) ? this.matcher : this.nonSpecialMatcher;
    for (const seg of matcher.split(text)) {
      if ('id' in seg) {
        ids.push(seg.id);
        continue;
      }
      let w = 0;
      for (const word of this.preTokenize(this.normalize(seg.text))) {
        for (const id of this.encodeWord(word)) ids.push(id);
        if (++w % WORDS_PER_STEP === 0) yield;
      }
    }
  }

  private encodeWord(word: string): readonly number[] {
    let ids = this.wordCache.get(word);
    if (!ids) {
      ids = this.model.encodeWord(toByteLevel(word));
      if (word.length > MAX_CACHED_WORD_CHARS) return ids; // rare, and each one costly to keep
      const bytes = 2 * word.length + 8 * ids.length + CACHE_ENTRY_OVERHEAD;
      // Cleared rather than LRU-evicted when full: cheap, and refills with the hot words.
      if (this.wordCacheBytes + bytes > WORD_CACHE_BYTES) {
        this.wordCache.clear();
        this.wordCacheBytes = 0;
      }
      this.wordCache.set(word, ids);
      this.wordCacheBytes += bytes;
    }
    return ids;
  }

  /** Bytes the word cache holds now (by the estimate that bounds it). */
  get cacheBytes(): number {
    return this.wordCacheBytes;
  }

  /**
   * Most UTF-16 units one token can stand for: the longest vocabulary token in bytes (a code
   * unit is at least one UTF-8 byte) or added token, times 3 if a normalizer may shrink the
   * text first; none when an added token strips the whitespace around it (that whitespace
   * becomes no token at all).
   */
  private charsPerTokenBound(normalizer: unknown): number | null {
    let max = 1;
    for (const t of this.added.values()) {
      if (t.lstrip || t.rstrip) return null;
      max = Math.max(max, t.content.length);
    }
    for (const tok of this.vocab.keys()) max = Math.max(max, byteLevelTokenBytes(tok).length);
    return normalizer === null || normalizer === undefined ? max : 3 * max;
  }

  decode(ids: readonly number[], o: DecodeOptions = {}): string {
    const parts: Uint8Array[] = [];
    let total = 0;
    for (const id of ids) {
      if (o.skipSpecialTokens && this.specialIds.has(id)) continue;
      const bytes = this.tokenBytes(id);
      if (!bytes) continue;
      parts.push(bytes);
      total += bytes.length;
    }
    const all = new Uint8Array(total);
    let off = 0;
    for (const p of parts) {
      all.set(p, off);
      off += p.length;
    }
    return new TextDecoder().decode(all);
  }

  tokenToId(token: string): number | undefined {
    for (const t of this.added.values()) if (t.content === token) return t.id;
    return this.vocab.get(token);
  }

  idToToken(id: number): string | undefined {
    return this.idToTokenTable[id];
  }

  tokenBytes(id: number): Uint8Array | undefined {
    const cached = this.bytesCache[id];
    if (cached) return cached;
    const token = this.idToTokenTable[id];
    if (token === undefined) return undefined;
    const bytes = byteLevelTokenBytes(token);
    this.bytesCache[id] = bytes;
    return bytes;
  }
}

function parseMerge(m: string | [string, string]): [string, string] {
  if (Array.isArray(m)) return m;
  const space = m.indexOf(' ', 1);
  if (space < 0) throw new Error(`malformed BPE merge: "${m}"`);
  return [m.slice(0, space), m.slice(space + 1)];
}

function validate(json: unknown): TokenizerJson {
  const j = json as TokenizerJson;
  if (!j?.model?.vocab || !Array.isArray(j.model.merges)) {
    throw new Error('tokenizer.json: expected a BPE model with vocab and merges');
  }
  if (j.model.type !== undefined && j.model.type !== 'BPE') {
    throw new Error(`tokenizer.json: unsupported model type ${j.model.type}`);
  }
  if (j.model.continuing_subword_prefix || j.model.end_of_word_suffix) {
    throw new Error('tokenizer.json: subword prefixes/suffixes are not byte-level BPE');
  }
  const dec = j.decoder;
  const hasByteLevel =
    dec?.type === 'ByteLevel' || (dec?.decoders ?? []).some((d) => d.type === 'ByteLevel');
  if (!hasByteLevel) throw new Error('tokenizer.json: decoder is not ByteLevel');
  return j;
}
