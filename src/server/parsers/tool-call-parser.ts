import {
  ToolCallStreamParser,
  type ToolCallDelta,
  type ToolCallParserOptions,
  type ToolSpec,
} from './tool-call-stream-parser.js';

export {
  ToolCallStreamParser,
  type ToolCallDelta,
  type ToolCallOutput,
  type ToolCallParserOptions,
  type ToolSpec,
} from './tool-call-stream-parser.js';

/** An OpenAI `tool_calls` entry. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ParsedToolCalls {
  /** Text outside the call blocks (malformed blocks included verbatim); '' when none. */
  content: string;
  toolCalls: ToolCall[];
}

/**
 * Non-streaming `minimax-m3` tool-call parser (shared/design/minimax-m3.md §4):
 * `NS<tool_call>NS<invoke name="f">NS<param>value NS</param>…NS</invoke>…NS</tool_call>`,
 * NS = `]<]minimax[>[`. Each invoke becomes one call whose `arguments` is the compact JSON of
 * its parameters, typed by the tool's JSON Schema (see `castLeaf`). A block that is malformed
 * or never closed is returned verbatim as content; other blocks still parse. Content is not
 * trimmed: callers reporting `content: null` next to calls should test `content.trim()`.
 */
export function parseToolCalls(
  text: string,
  tools: readonly ToolSpec[] = [],
  opts: ToolCallParserOptions = {},
): ParsedToolCalls {
  const parser = new ToolCallStreamParser(tools, opts);
  const a = parser.feed(text);
  const b = parser.finish();
  return { content: a.content + b.content, toolCalls: collectToolCalls([...a.calls, ...b.calls]) };
}

/** Folds deltas (from any number of `feed` results) into complete OpenAI tool calls. */
export function collectToolCalls(deltas: readonly ToolCallDelta[]): ToolCall[] {
  const calls: ToolCall[] = [];
  for (const d of deltas) {
    const call = (calls[d.index] ??= {
      id: d.id ?? '',
      type: 'function',
      function: { name: d.name ?? '', arguments: '' },
    });
    if (d.name !== undefined) call.function.name = d.name;
    if (d.id !== undefined) call.id = d.id;
    call.function.arguments += d.arguments ?? '';
  }
  return calls.filter((c) => c !== undefined);
}
