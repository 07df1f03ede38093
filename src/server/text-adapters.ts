import { endsWithThinkOpener, renderChat, selectChatTemplate } from '../tokenizer/chat-template.js';
import { IncrementalDecoder } from '../tokenizer/incremental-decoder.js';
import { parserMarkerIds } from '../tokenizer/minimax-m3-tokens.js';
import type { ChatTemplateSource } from '../tokenizer/tokenizer-config.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { ReasoningStreamParser } from './parsers/reasoning-parser.js';
import { ToolCallStreamParser } from './parsers/tool-call-parser.js';
import { planToolChoice, toolChoicePrefill } from './parsers/tool-choice.js';
import { toolCallGrammar } from './parsers/tool-call-grammar.js';
import type { ChatRenderer, OutputParsers, ServerTokenizer, StreamDecoder } from './server-deps.js';

/** Names accepted by --reasoning-parser and --tool-call-parser. */
export const PARSER_NAMES = ['minimax-m3'] as const;

/**
 * The server's view of a HuggingFace tokenizer. The M3 parser markers are decoded even when
 * special tokens are skipped: the output parsers must see them to split reasoning and calls.
 */
export function adaptTokenizer(tok: Tokenizer): ServerTokenizer {
  const keepIds = parserMarkerIds(tok);
  const specialTokens = [...tok.specialIds].flatMap((id) => tok.idToToken(id) ?? []);
  return {
    vocabSize: tok.vocabSize,
    maxCharsPerToken: tok.maxCharsPerToken,
    specialTokens,
    encode: (text, o) => tok.encode(text, o),
    encodeAsync: (text, o) => tok.encodeAsync(text, o),
    decode: (ids, o) => tok.decode(ids, o),
    createDecoder: (o) =>
      new IncrementalDecoder(tok, { skipSpecialTokens: o.skipSpecialTokens, keepIds }),
  };
}

/**
 * Bytes as tokens (id = byte value) with one special id, `eosId`, decoded as nothing when
 * special tokens are skipped. For checkpoints that ship no tokenizer, such as a random tiny
 * model whose vocabulary is 256 with EOS 255 (a byte UTF-8 never uses), or a real-dimension
 * `--load-format dummy` model: ids from 256 up have no byte and decode as `<id>`, so every
 * generated token shows as text (and streams as its own event).
 */
export function byteTokenizer(vocabSize: number, eosId: number): ServerTokenizer {
  const text = new TextDecoder();
  const enc = new TextEncoder();
  const bytes = (ids: readonly number[], skip: boolean) => {
    const out: number[] = [];
    for (const id of ids) {
      if (skip && id === eosId) continue;
      if (id < 256) out.push(id);
      else out.push(...enc.encode(`<${id}>`));
    }
    return Uint8Array.from(out);
  };
  const self: ServerTokenizer = {
    vocabSize,
    maxCharsPerToken: 1, // one token per UTF-8 byte, and a UTF-16 unit is at least one byte
    specialTokens: [],
    encode: (s) => [...new TextEncoder().encode(s)],
    // One native pass over the bytes: no BPE work to spread over event-loop turns.
    encodeAsync: async (s) => self.encode(s, { addSpecialTokens: false }),
    decode: (ids, o) => text.decode(bytes(ids, o.skipSpecialTokens)),
    createDecoder: (o): StreamDecoder => {
      const stream = new TextDecoder();
      return {
        feed: (ids) => stream.decode(bytes(ids, o.skipSpecialTokens), { stream: true }),
        flush: () => stream.decode(),
      };
    },
  };
  return self;
}

/**
 * Renders with the checkpoint's Jinja template (its `tool_use` variant when tools are given),
 * or the built-in MiniMax-M3 template when it ships none.
 */
export function chatRenderer(
  source: ChatTemplateSource | undefined,
  tokens: { bosToken?: string; eosToken?: string } = {},
): ChatRenderer {
  return (messages, opts) => {
    const template = selectChatTemplate(source, { hasTools: opts.tools.length > 0 });
    // Spread: the template's message type is an open record, ours a closed interface.
    return renderChat(
      template,
      messages.map((m) => ({ ...m })),
      {
        tools: opts.tools,
        addGenerationPrompt: opts.addGenerationPrompt,
        kwargs: opts.kwargs,
        ...tokens,
      },
    ).prompt;
  };
}

/** The output parsers for --reasoning-parser / --tool-call-parser (null: off). */
export function outputParsers(o: {
  reasoning: string | null;
  toolCall: string | null;
}): OutputParsers {
  for (const name of [o.reasoning, o.toolCall])
    if (name !== null && !(PARSER_NAMES as readonly string[]).includes(name))
      throw new Error(`unknown parser "${name}" (known: ${PARSER_NAMES.join(', ')})`);
  const parsers: {
    -readonly [K in keyof OutputParsers]: OutputParsers[K];
  } = {};
  if (o.reasoning !== null)
    parsers.reasoning = (init) =>
      new ReasoningStreamParser({ prefilledOpener: endsWithThinkOpener(init.promptText) });
  if (o.toolCall !== null) {
    parsers.toolCall = (init) => new ToolCallStreamParser(init.tools);
    parsers.toolChoicePrefill = (init) =>
      toolChoicePrefill(planToolChoice(init.toolChoice, init.tools), init.promptText);
    parsers.toolCallGrammar = (init) => {
      const plan = planToolChoice(init.toolChoice, init.tools);
      return plan.required ? toolCallGrammar(init.tools, plan.name) : null;
    };
  }
  return parsers;
}
