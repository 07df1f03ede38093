import { formatToolCalls as formatCalls } from '../server/parsers/tool-call-formatter.js';
import { builtinM3Template, renderChat } from '../tokenizer/chat-template.js';

/**
 * Training text is rendered with the server's own pieces, so that training and serving agree
 * exactly: the built-in MiniMax-M3 chat template (src/tokenizer/builtin-m3-template.ts, shipped
 * as the checkpoint's `chat_template` too) and the tool-call formatter of the parsers.
 */
export const M3_CHAT_TEMPLATE: string = builtinM3Template;

/** MiniMax-M3 control strings (shared/design/minimax-m3.md §4). */
export const M3 = {
  bos: ']~!b[',
  turn: ']~b]',
  eot: '[e~[',
  thinkOpen: '<mm:think>',
  thinkClose: '</mm:think>',
  ns: ']<]minimax[>[',
} as const;

/** Special tokens of the tiny model's tokenizer, in id order (ids 0..5). */
export const SPECIAL_TOKENS: readonly string[] = [
  M3.bos,
  M3.turn,
  M3.eot,
  M3.thinkOpen,
  M3.thinkClose,
  M3.ns,
];

export type ArgValue = string | number | boolean;
export type ToolArguments = Record<string, ArgValue>;

/** An OpenAI tool call as a client sends it back (arguments are a JSON string). */
export interface OpenAiToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type ChatMessage = {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: OpenAiToolCall[];
  tool_call_id?: string;
};

export interface JsonSchemaProperty {
  type: 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  enum?: string[];
}

export interface ToolSpec {
  type: 'function';
  function: {
    name: string;
    description: string;
    parameters: {
      type: 'object';
      properties: Record<string, JsonSchemaProperty>;
      required: string[];
    };
  };
}

export interface ToolCall {
  name: string;
  arguments: ToolArguments;
}

/** What the assistant generates for one turn (the training target). */
export interface AssistantTurn {
  reasoning: string;
  content: string;
  toolCalls?: ToolCall[];
}

/** The prompt text the server renders for these messages (ends with `]~b]ai\n`). */
export function renderPrompt(
  messages: readonly ChatMessage[],
  tools?: readonly ToolSpec[],
): string {
  return renderChat(M3_CHAT_TEMPLATE, messages, tools ? { tools } : {}).prompt;
}

/** The tool-call block, identical to the template's rendering of a past assistant turn. */
export function formatToolCalls(calls: readonly ToolCall[]): string {
  return formatCalls(calls);
}

/** The generated text of one assistant turn: reasoning, content, tool calls, end of turn. */
export function renderCompletion(turn: AssistantTurn): string {
  const calls = turn.toolCalls && turn.toolCalls.length > 0 ? formatToolCalls(turn.toolCalls) : '';
  return `${M3.thinkOpen}${turn.reasoning}${M3.thinkClose}${turn.content}${calls}${M3.eot}`;
}

/** The OpenAI message a client sends back for an assistant turn (reasoning dropped). */
export function assistantMessage(turn: AssistantTurn, callId: string): ChatMessage {
  const msg: ChatMessage = {
    role: 'assistant',
    content: turn.content === '' ? null : turn.content,
  };
  if (turn.toolCalls && turn.toolCalls.length > 0) {
    msg.tool_calls = turn.toolCalls.map((c, i) => ({
      id: `${callId}-${i}`,
      type: 'function',
      function: { name: c.name, arguments: JSON.stringify(c.arguments) },
    }));
  }
  return msg;
}
