import { type LogitsConstraint, maskOf } from '../logits-constraint.js';

export interface ReasoningTokens {
  /** `<mm:think>` as one token id. */
  readonly open: number;
  /** `</mm:think>` as one token id. */
  readonly close: number;
}

type Phase = 'start' | 'reasoning' | 'grammar';

/**
 * Leaves reasoning free and applies `inner` to what follows it, as SGLang's and vLLM's
 * reasoning-aware structured outputs do. With the think opener prefilled the output starts
 * inside reasoning and is free until `</mm:think>`. Otherwise the first token may be
 * `<mm:think>` (reasoning follows, free), a stray `</mm:think>` (the reasoning parser drops it)
 * or the grammar's first token; after that the grammar rules. Reasoning may not end the output
 * (stop tokens are masked there): the structured part always comes.
 */
export class ReasoningGate implements LogitsConstraint {
  private phase: Phase;
  /** Everything but the stop tokens. */
  private readonly reasoningMask: Uint32Array;

  constructor(
    private readonly inner: LogitsConstraint,
    private readonly think: ReasoningTokens,
    startsInReasoning: boolean,
    vocab: { readonly vocabSize: number; readonly stopTokenIds: readonly number[] },
  ) {
    this.phase = startsInReasoning ? 'reasoning' : 'start';
    const stops = maskOf(vocab.vocabSize, vocab.stopTokenIds);
    this.reasoningMask = maskOf(vocab.vocabSize, []).map((_, i) => ~stops[i]! >>> 0);
  }

  prepare(): Promise<void> {
    return this.inner.prepare?.() ?? Promise.resolve();
  }

  nextTokenMask(): Uint32Array | null {
    if (this.phase === 'reasoning') return this.reasoningMask;
    const mask = this.inner.nextTokenMask();
    if (this.phase === 'grammar' || mask === null) return mask;
    const withThink = Uint32Array.from(mask);
    for (const t of [this.think.open, this.think.close])
      withThink[t >>> 5] = withThink[t >>> 5]! | (1 << (t & 31));
    return withThink;
  }

  accept(tokenId: number): void {
    if (this.phase === 'reasoning') {
      if (tokenId === this.think.close) this.phase = 'grammar';
      return;
    }
    if (this.phase === 'start') {
      if (tokenId === this.think.open) return void (this.phase = 'reasoning');
      this.phase = 'grammar';
      if (tokenId === this.think.close) return;
    }
    this.inner.accept(tokenId);
  }

  isTerminated(): boolean {
    return this.phase === 'grammar' && this.inner.isTerminated();
  }
}
