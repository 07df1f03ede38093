import type {
  ChatRenderer,
  ReasoningDelta,
  ReasoningParser,
  ServerTokenizer,
  ToolCallOutput,
  ToolCallParser,
} from '../../src/server/server-deps.js';

export const EOS_ID = 65_536;

/** One token per UTF-16 code unit; id 65536 is the EOS special token "<eos>". */
export const fakeTokenizer: ServerTokenizer = {
  vocabSize: 65_537,
  encode: (text) => [...text].map((c) => c.charCodeAt(0)),
  decode: (ids, { skipSpecialTokens }) =>
    ids
      .map((id) => (id === EOS_ID ? (skipSpecialTokens ? '' : '<eos>') : String.fromCharCode(id)))
      .join(''),
  createDecoder: ({ skipSpecialTokens }) => ({
    feed: (ids) => fakeTokenizer.decode(ids, { skipSpecialTokens }),
    flush: () => '',
  }),
};

export const ids = (text: string): number[] =>
  fakeTokenizer.encode(text, { addSpecialTokens: false });

/** `<|role|>content` per message, then `<|assistant|>` (+ `<think>` when thinking is on). */
export const fakeChatTemplate: ChatRenderer = (messages, opts) => {
  const toolsLine = opts.tools.length
    ? `<|tools|>${opts.tools.map((t) => t.function.name).join(',')}`
    : '';
  const body = messages.map((m) => `<|${m.role}|>${m.content ?? ''}`).join('');
  const gen = opts.addGenerationPrompt ? '<|assistant|>' : '';
  return toolsLine + body + gen + (opts.kwargs['thinking'] ? '<think>' : '');
};

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
function partialTag(text: string, tag: string): number {
  for (let k = Math.min(tag.length - 1, text.length); k > 0; k--)
    if (text.endsWith(tag.slice(0, k))) return k;
  return 0;
}

/** A stand-in reasoning parser: `<think>…</think>` is reasoning, the rest content. */
export function fakeReasoningParser(startInside: boolean): ReasoningParser {
  let inside = startInside;
  let buf = '';
  const run = (end: boolean): ReasoningDelta => {
    const out: ReasoningDelta = { reasoning: '', content: '' };
    for (;;) {
      const tag = inside ? '</think>' : '<think>';
      const at = buf.indexOf(tag);
      if (at < 0) break;
      out[inside ? 'reasoning' : 'content'] += buf.slice(0, at);
      buf = buf.slice(at + tag.length);
      inside = !inside;
    }
    const keep = end ? 0 : partialTag(buf, inside ? '</think>' : '<think>');
    out[inside ? 'reasoning' : 'content'] += buf.slice(0, buf.length - keep);
    buf = buf.slice(buf.length - keep);
    return out;
  };
  return {
    feed: (text) => {
      buf += text;
      return run(false);
    },
    finish: () => run(true),
  };
}

/** A stand-in tool parser: `<call name="f">{json}</call>`; the name first, then the args. */
export function fakeToolCallParser(): ToolCallParser {
  let buf = '';
  let count = 0;
  const re = /<call name="([^"]+)">([\s\S]*?)<\/call>/;
  const run = (end: boolean): ToolCallOutput => {
    const out: ToolCallOutput = { content: '', calls: [] };
    for (let m = re.exec(buf); m; m = re.exec(buf)) {
      out.content += buf.slice(0, m.index);
      out.calls.push({ index: count, name: m[1]! }, { index: count, arguments: m[2]! });
      count++;
      buf = buf.slice(m.index + m[0].length);
    }
    const open = buf.indexOf('<call');
    const keep = end ? 0 : open >= 0 ? buf.length - open : partialTag(buf, '<call');
    out.content += buf.slice(0, buf.length - keep);
    buf = buf.slice(buf.length - keep);
    return out;
  };
  return {
    feed: (text) => {
      buf += text;
      return run(false);
    },
    finish: () => run(true),
  };
}
