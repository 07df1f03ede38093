import type { ChatRenderer, ServerTokenizer } from '../../src/server/server-deps.js';

export const EOS_ID = 65_536;

/** One token per UTF-16 code unit; id 65536 is the EOS special token "<eos>". */
export const fakeTokenizer: ServerTokenizer = {
  vocabSize: 65_537,
  maxCharsPerToken: 1,
  specialTokens: ['<eos>'],
  encode: (text) => [...text].map((c) => c.charCodeAt(0)),
  encodeAsync: async (text) => [...text].map((c) => c.charCodeAt(0)),
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
