import { randomBytes } from 'node:crypto';
import type { EncodeOpts } from '../server-deps.js';
import type { ChatMessage } from './types.js';

/** Text to token ids (the server's encodeText bound to its context). */
export type TextEncode = (text: string, opts: EncodeOpts) => Promise<number[]>;

/**
 * Keeps special-token strings that clients wrote in message text from being read as special
 * tokens (a user writing the chat format's turn markers could forge a system turn). Before
 * rendering, each occurrence in a message's text becomes a placeholder that no client can
 * guess (a random nonce between private-use characters); after rendering, the placeholders are
 * tokenized as plain text and everything else as usual.
 */
export class ContentSpecials {
  private readonly nonce = randomBytes(8).toString('hex');
  private readonly pattern: RegExp;

  constructor(private readonly specials: readonly string[]) {
    this.pattern = new RegExp(`\uE000${this.nonce}:(\\d+)\uE001`, 'g');
  }

  private hide(text: string): string {
    let out = text;
    this.specials.forEach((s, k) => {
      if (out.includes(s)) out = out.split(s).join(`\uE000${this.nonce}:${k}\uE001`);
    });
    return out;
  }

  /** The messages with special-token strings in their text replaced by placeholders. */
  protect(messages: readonly ChatMessage[]): ChatMessage[] {
    return messages.map((m) => {
      const out: ChatMessage = { ...m, content: m.content === null ? null : this.hide(m.content) };
      if (m.reasoning_content !== undefined) out.reasoning_content = this.hide(m.reasoning_content);
      return out;
    });
  }

  /** The rendered text with the placeholders put back. */
  restore(rendered: string): string {
    return rendered.replace(this.pattern, (_m, k: string) => this.specials[Number(k)]!);
  }

  /** Token ids of the rendered text: placeholders as plain text, the rest as usual. */
  async encode(encode: TextEncode, rendered: string): Promise<number[]> {
    const ids: number[] = [];
    let last = 0;
    for (const m of rendered.matchAll(this.pattern)) {
      const before = rendered.slice(last, m.index);
      if (before) append(ids, await encode(before, { addSpecialTokens: false }));
      const text = this.specials[Number(m[1])]!;
      append(ids, await encode(text, { addSpecialTokens: false, parseSpecialTokens: false }));
      last = m.index + m[0].length;
    }
    const rest = rendered.slice(last);
    if (rest) append(ids, await encode(rest, { addSpecialTokens: false }));
    return ids;
  }
}

/** `out.push(...more)` without spreading: a megabyte prompt's ids overflow the call stack. */
function append(out: number[], more: readonly number[]): void {
  for (const id of more) out.push(id);
}
