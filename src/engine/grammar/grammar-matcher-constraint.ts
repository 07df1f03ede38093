import type * as XGrammar from '@mlc-ai/web-xgrammar';
import type { LogitsConstraint } from '../logits-constraint.js';

/**
 * A LogitsConstraint over one xgrammar GrammarMatcher (one per sequence). xgrammar hands out
 * the next-token bitmask only asynchronously, so the mask for the next step is computed right
 * after each accept and awaited in `prepare()`, which the engine runs alongside the forward.
 * `nextTokenMask()` without a finished `prepare()` is a contract violation and throws.
 */
export class GrammarMatcherConstraint implements LogitsConstraint {
  private mask: Uint32Array | null = null;
  private pending: Promise<void>;
  private disposed = false;
  private terminated = false;

  constructor(private readonly matcher: XGrammar.GrammarMatcher) {
    this.pending = this.computeMask();
  }

  prepare(): Promise<void> {
    return this.pending;
  }

  nextTokenMask(): Uint32Array {
    if (this.mask === null) throw new Error('grammar mask requested before prepare() finished');
    return this.mask;
  }

  accept(tokenId: number): void {
    if (this.disposed) throw new Error('grammar matcher already disposed');
    if (!this.matcher.acceptToken(tokenId)) {
      throw new Error(`the grammar does not accept token ${tokenId}`);
    }
    this.terminated = this.matcher.isTerminated();
    this.mask = null;
    this.pending = this.terminated ? Promise.resolve() : this.computeMask();
  }

  isTerminated(): boolean {
    return this.terminated;
  }

  /** Frees the matcher's WASM memory; the request is over. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    // A mask computation still running reads the matcher: free it once that has settled.
    void this.pending.finally(() => this.matcher.dispose());
  }

  private async computeMask(): Promise<void> {
    const words = await this.matcher.getNextTokenBitmask();
    if (this.disposed) return;
    this.mask = new Uint32Array(words.buffer, words.byteOffset, words.length);
  }
}
