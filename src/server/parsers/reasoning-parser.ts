import { M3_TOKENS } from '../../tokenizer/minimax-m3-tokens.js';

const OPEN = M3_TOKENS.thinkOpen;
const CLOSE = M3_TOKENS.thinkClose;

/** Reasoning and content split out of model output (either may be ''). */
export interface ReasoningSplit {
  reasoning: string;
  content: string;
}

export interface ReasoningParserOptions {
  /**
   * The prompt ended with `<mm:think>` (`RenderedChat.prefilledOpener`), so the output starts
   * inside reasoning and the first `</mm:think>` ends it.
   */
  prefilledOpener?: boolean;
}

type Phase = 'start' | 'reasoning' | 'content';

/**
 * Streaming `minimax-m3` reasoning parser: feed decoded text deltas, get reasoning and content
 * deltas. Markers may be split across deltas; text that could be the start of one is held
 * back until it is decided.
 *
 * Rules (shared/design/minimax-m3.md §4):
 * - At the start of the output (leading whitespace ignored), `<mm:think>` opens reasoning; with
 *   a prefilled opener, a repeated `<mm:think>` there is dropped.
 * - Without a prefilled opener, a single stray `</mm:think>` at the start is dropped and the rest
 *   is content; with one, the first `</mm:think>` ends reasoning.
 * - After reasoning ends, everything is content, later `</mm:think>` markers included.
 * - If no closer ever comes, everything after the opener is reasoning.
 * - Markers only count at the start: output that begins as content stays content.
 *
 * The concatenated deltas of a stream always equal {@link parseReasoning} of the whole text.
 */
export class ReasoningStreamParser {
  private phase: Phase = 'start';
  private buffer = '';
  private readonly prefilled: boolean;

  constructor(opts: ReasoningParserOptions = {}) {
    this.prefilled = opts.prefilledOpener ?? false;
  }

  feed(text: string): ReasoningSplit {
    this.buffer += text;
    const out: ReasoningSplit = { reasoning: '', content: '' };
    if (this.phase === 'start') this.decideStart();
    if (this.phase === 'reasoning') out.reasoning = this.takeReasoning();
    if (this.phase === 'content') {
      out.content += this.buffer;
      this.buffer = '';
    }
    return out;
  }

  /** Flushes held-back text once the output is complete. */
  finish(): ReasoningSplit {
    const rest = this.buffer;
    this.buffer = '';
    const inReasoning = this.phase === 'reasoning' || (this.phase === 'start' && this.prefilled);
    return inReasoning ? { reasoning: rest, content: '' } : { reasoning: '', content: rest };
  }

  private decideStart(): void {
    const head = this.buffer.trimStart();
    if (head.startsWith(OPEN)) {
      this.buffer = head.slice(OPEN.length);
      this.phase = 'reasoning';
    } else if (head.startsWith(CLOSE)) {
      this.buffer = head.slice(CLOSE.length);
      this.phase = 'content';
    } else if (head !== '' && !OPEN.startsWith(head) && !CLOSE.startsWith(head)) {
      this.phase = this.prefilled ? 'reasoning' : 'content';
    }
  }

  /** Emits reasoning up to the closer (switching to content) or up to a possible partial closer. */
  private takeReasoning(): string {
    const end = this.buffer.indexOf(CLOSE);
    if (end >= 0) {
      const reasoning = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + CLOSE.length);
      this.phase = 'content';
      return reasoning;
    }
    const keep = partialSuffix(this.buffer, CLOSE);
    const reasoning = this.buffer.slice(0, this.buffer.length - keep);
    this.buffer = this.buffer.slice(this.buffer.length - keep);
    return reasoning;
  }
}

/** Non-streaming form of {@link ReasoningStreamParser}. */
export function parseReasoning(text: string, opts: ReasoningParserOptions = {}): ReasoningSplit {
  const parser = new ReasoningStreamParser(opts);
  const a = parser.feed(text);
  const b = parser.finish();
  return { reasoning: a.reasoning + b.reasoning, content: a.content + b.content };
}

/** Length of the longest suffix of `text` that is a proper prefix of `marker`. */
export function partialSuffix(text: string, marker: string): number {
  for (let n = Math.min(marker.length - 1, text.length); n > 0; n--) {
    if (text.endsWith(marker.slice(0, n))) return n;
  }
  return 0;
}
