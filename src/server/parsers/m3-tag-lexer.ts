import { M3_TOKENS } from '../../tokenizer/minimax-m3-tokens.js';

import { partialSuffix } from './reasoning-parser.js';

const NS = M3_TOKENS.ns;
// A tag body longer than this is not a tag: the marker was literal text.
const MAX_TAG_LEN = 256;

/** A piece of text in the M3 tool-call syntax; `raw` is the exact source text. */
export type TagEvent =
  | { kind: 'text'; raw: string }
  | { kind: 'open'; name: string; attrs: string; raw: string }
  | { kind: 'close'; name: string; raw: string };

type TagAt = { event: TagEvent; end: number } | 'incomplete' | 'not-a-tag';

/**
 * Incremental lexer for NS-prefixed tags (`NS<name attrs>`, `NS</name>`, whitespace allowed
 * between NS and `<`). Emits only what is certain: text that might be the start of a tag is
 * held until it is one or cannot become one.
 */
export class M3TagLexer {
  private buffer = '';

  push(text: string): TagEvent[] {
    this.buffer += text;
    const events: TagEvent[] = [];
    let pos = 0;
    for (;;) {
      const at = this.buffer.indexOf(NS, pos);
      if (at < 0) {
        const keep = Math.max(
          partialSuffix(this.buffer.slice(pos), NS),
          highSurrogateTail(this.buffer),
        );
        pushText(events, this.buffer.slice(pos, this.buffer.length - keep));
        pos = this.buffer.length - keep;
        break;
      }
      pushText(events, this.buffer.slice(pos, at));
      const tag = tagAt(this.buffer, at);
      if (tag === 'incomplete') {
        pos = at;
        break;
      }
      if (tag === 'not-a-tag') {
        pushText(events, NS);
        pos = at + NS.length;
        continue;
      }
      events.push(tag.event);
      pos = tag.end;
    }
    this.buffer = this.buffer.slice(pos);
    return events;
  }

  /** Everything still held, as text: the output ended. */
  end(): TagEvent[] {
    const events: TagEvent[] = [];
    pushText(events, this.buffer);
    this.buffer = '';
    return events;
  }
}

/** 1 when the text ends in the first half of a surrogate pair: a JSON escape must not split it. */
function highSurrogateTail(text: string): number {
  const last = text.charCodeAt(text.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? 1 : 0;
}

function pushText(events: TagEvent[], text: string): void {
  if (text === '') return;
  const last = events[events.length - 1];
  if (last?.kind === 'text') last.raw += text;
  else events.push({ kind: 'text', raw: text });
}

function tagAt(buf: string, at: number): TagAt {
  let i = at + NS.length;
  while (i < buf.length && ' \t\r\n'.includes(buf[i]!)) i++;
  if (i >= buf.length) return i - at > MAX_TAG_LEN ? 'not-a-tag' : 'incomplete';
  if (buf[i] !== '<') return 'not-a-tag';
  const gt = buf.indexOf('>', i);
  const next = buf.indexOf(NS, i);
  if (gt < 0 || (next >= 0 && next < gt)) {
    return next < 0 && buf.length - at <= MAX_TAG_LEN ? 'incomplete' : 'not-a-tag';
  }
  if (gt - at > MAX_TAG_LEN) return 'not-a-tag';
  const body = buf.slice(i + 1, gt);
  const raw = buf.slice(at, gt + 1);
  if (body.startsWith('/'))
    return { event: { kind: 'close', name: body.slice(1).trim(), raw }, end: gt + 1 };
  const trimmed = body.trim();
  const space = trimmed.search(/\s/);
  const name = space < 0 ? trimmed : trimmed.slice(0, space);
  const attrs = space < 0 ? '' : trimmed.slice(space + 1);
  if (name === '') return 'not-a-tag';
  return { event: { kind: 'open', name, attrs, raw }, end: gt + 1 };
}
