import type * as XGrammar from '@mlc-ai/web-xgrammar';
import type { LogitsConstraint } from '../logits-constraint.js';
import { GrammarChecker, type GrammarSource } from './grammar-checker.js';
import { GrammarMatcherConstraint } from './grammar-matcher-constraint.js';
import { ReasoningGate, type ReasoningTokens } from './reasoning-gate.js';
import { loadXGrammar } from './xgrammar.js';

/** What to constrain the output to: any JSON object, a JSON Schema, or an EBNF grammar. */
export type GrammarSpec = { readonly kind: 'json_object' } | GrammarSource;

/** Where the output starts relative to reasoning (`<mm:think>` … `</mm:think>`). */
export type ReasoningStart = 'none' | 'may-think' | 'inside';

/** One request's constraint and the call that frees it once the request is over. */
export interface GrammarConstraint {
  readonly constraint: LogitsConstraint;
  dispose(): void;
}

export interface GrammarVocab {
  /**
   * Token strings by id in the tokenizer's stored (byte-level) form; '' for ids that must
   * never be produced inside a grammar (special tokens, holes). Length ≤ vocabSize.
   */
  readonly encodedVocab: readonly string[];
  /** The model's logits width V (≥ the tokenizer's vocabulary: padding is never allowed). */
  readonly vocabSize: number;
  /** Ids that end the output (EOS): the only tokens allowed once a grammar is complete. */
  readonly stopTokenIds: readonly number[];
  /** Single-token think markers, when the model has them and a reasoning parser is on. */
  readonly think?: ReasoningTokens;
}

/**
 * Structured outputs with xgrammar (as SGLang and vLLM use it): grammars are checked in a
 * worker, compiled once per spec against the model's vocabulary and kept in a bounded LRU
 * cache; each request gets its own matcher. JSON is compact (no free whitespace, one line), so
 * a small model cannot wander off into whitespace.
 */
export class GrammarService {
  private readonly cache = new Map<string, Promise<XGrammar.CompiledGrammar>>();
  private readonly checker = new GrammarChecker();

  private constructor(
    private readonly xg: ReturnType<typeof loadXGrammar>,
    private readonly compiler: XGrammar.GrammarCompiler,
    private readonly vocab: GrammarVocab,
    private readonly cacheSize: number,
  ) {}

  static async create(vocab: GrammarVocab, cacheSize = 64): Promise<GrammarService> {
    const xg = loadXGrammar();
    const info = await xg.TokenizerInfo.createTokenizerInfo(
      [...vocab.encodedVocab],
      'byte_level',
      false,
      vocab.vocabSize,
      [...vocab.stopTokenIds],
    );
    const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, true);
    info.dispose();
    return new GrammarService(xg, compiler, vocab, cacheSize);
  }

  /** A fresh constraint for one sequence; rejects with GrammarError for an invalid grammar. */
  async constraint(spec: GrammarSpec, reasoning: ReasoningStart): Promise<GrammarConstraint> {
    const compiled = await this.compiled(spec);
    const matcher = await this.xg.GrammarMatcher.createGrammarMatcher(compiled);
    const inner = new GrammarMatcherConstraint(matcher);
    await inner.prepare();
    const think = this.vocab.think;
    const constraint =
      reasoning === 'none' || !think
        ? inner
        : new ReasoningGate(inner, think, reasoning === 'inside', this.vocab);
    return { constraint, dispose: () => inner.dispose() };
  }

  /** Compiles (or reuses) the grammar of `spec`; rejects with GrammarError when invalid. */
  compiled(spec: GrammarSpec): Promise<XGrammar.CompiledGrammar> {
    const key = cacheKey(spec);
    const hit = this.cache.get(key);
    if (hit) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit;
    }
    const compiling = this.compile(spec);
    this.cache.set(key, compiling);
    compiling.catch(() => this.cache.delete(key));
    while (this.cache.size > this.cacheSize) {
      const [oldest, grammar] = this.cache.entries().next().value!;
      this.cache.delete(oldest);
      // Matchers hold their own reference to the compiled grammar: freeing the handle is safe.
      void grammar.then((g) => g.dispose()).catch(() => undefined);
    }
    return compiling;
  }

  get cachedGrammars(): number {
    return this.cache.size;
  }

  async close(): Promise<void> {
    await this.checker.close();
    for (const g of this.cache.values()) void g.then((c) => c.dispose()).catch(() => undefined);
    this.cache.clear();
    this.compiler.dispose();
  }

  private async compile(spec: GrammarSpec): Promise<XGrammar.CompiledGrammar> {
    if (spec.kind === 'json_object') {
      return this.compiler.compileJSONSchema('{"type": "object"}', false, -1, undefined, false);
    }
    await this.checker.check(spec);
    if (spec.kind === 'json_schema') return this.compiler.compileJSONSchema(spec.schema, false, -1);
    return this.compiler.compileGrammar(spec.grammar);
  }
}

function cacheKey(spec: GrammarSpec): string {
  if (spec.kind === 'json_object') return 'json_object';
  return `${spec.kind}\n${spec.kind === 'json_schema' ? spec.schema : spec.grammar}`;
}
