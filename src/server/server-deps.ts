/**
 * What the HTTP server needs from the text side (tokenizer, chat template, output parsers), as
 * narrow interfaces. The real implementations live in src/tokenizer/ and src/server/parsers/;
 * serve-command adapts them, tests pass fakes.
 */
import type { ChatMessage, FunctionTool, ToolChoice } from './openai/types.js';

/** Turns token ids into text deltas without ever splitting a UTF-8 character. */
export interface StreamDecoder {
  feed(ids: readonly number[]): string;
  /** Text still held back (an incomplete character at the end) once generation is over. */
  flush(): string;
}

export interface EncodeOpts {
  readonly addSpecialTokens: boolean;
  readonly parseSpecialTokens?: boolean;
}

export interface ServerTokenizer {
  readonly vocabSize: number;
  /**
   * `parseSpecialTokens: false` reads special-token strings as plain text (for text a client
   * wrote, which must not forge the chat format's markers); the default reads them as tokens.
   */
  encode(text: string, opts: EncodeOpts): number[];
  /** `encode`'s ids, giving the event loop turns while it works (for large inputs). */
  encodeAsync(text: string, opts: EncodeOpts): Promise<number[]>;
  /** Most UTF-16 units one token can cover (a length check before tokenizing); null: unknown. */
  readonly maxCharsPerToken: number | null;
  /** The strings of the special tokens (turn markers and the like). */
  readonly specialTokens: readonly string[];
  decode(ids: readonly number[], opts: { skipSpecialTokens: boolean }): string;
  createDecoder(opts: { skipSpecialTokens: boolean }): StreamDecoder;
}

export interface ChatRenderOptions {
  readonly tools: readonly FunctionTool[];
  readonly addGenerationPrompt: boolean;
  readonly kwargs: Readonly<Record<string, unknown>>;
}

/** Renders messages to the prompt text (a Jinja chat template or the built-in M3 format). */
export type ChatRenderer = (messages: readonly ChatMessage[], opts: ChatRenderOptions) => string;

export interface ReasoningDelta {
  reasoning: string;
  content: string;
}

/** Splits one choice's text stream into reasoning and content. */
export interface ReasoningParser {
  feed(text: string): ReasoningDelta;
  finish(): ReasoningDelta;
}

/** A piece of one tool call: the name comes once, the JSON arguments in fragments. */
export interface ToolCallDelta {
  /** Position of the call within this choice (0, 1, ...). */
  index: number;
  id?: string;
  name?: string;
  arguments?: string;
}

export interface ToolCallOutput {
  content: string;
  calls: ToolCallDelta[];
}

/** Pulls tool calls out of one choice's content stream; what is not a call stays content. */
export interface ToolCallParser {
  feed(text: string): ToolCallOutput;
  finish(): ToolCallOutput;
}

export interface ReasoningParserInit {
  /** The rendered prompt: a prefilled think opener at its end means generation starts inside. */
  readonly promptText: string;
  readonly chatTemplateKwargs: Readonly<Record<string, unknown>>;
}

export interface ToolCallParserInit {
  readonly tools: readonly FunctionTool[];
  readonly toolChoice: ToolChoice;
  /**
   * Streaming parsers emit calls as they form; non-streaming ones may hold a block until it
   * closes, so that a malformed block can still come back as plain content.
   */
  readonly stream: boolean;
}

export interface ToolChoicePrefillInit extends ToolCallParserInit {
  /** The rendered prompt the prefill would be appended to. */
  readonly promptText: string;
}

export interface OutputParsers {
  /** Present when --reasoning-parser is on. */
  readonly reasoning?: (init: ReasoningParserInit) => ReasoningParser;
  /** Present when --tool-call-parser is on. */
  readonly toolCall?: (init: ToolCallParserInit) => ToolCallParser;
  /**
   * Text appended to the rendered prompt to force a call for tool_choice "required" or a named
   * function (the model then starts inside a call block); '' when nothing is forced. The server
   * feeds it through the choice's parsers as if the model had written it.
   */
  readonly toolChoicePrefill?: (init: ToolChoicePrefillInit) => string;
  /**
   * The EBNF grammar of a call block that satisfies tool_choice "required" or a named function
   * (null when nothing is forced). Used instead of the prefill when the server has a grammar
   * backend: every forced call is then well-formed and follows the tool's schema.
   */
  readonly toolCallGrammar?: (init: ToolCallParserInit) => string | null;
}
