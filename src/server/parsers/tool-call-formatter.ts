import { M3_TOKENS } from '../../tokenizer/minimax-m3-tokens.js';

const NS = M3_TOKENS.ns;

/** A function call to write out: OpenAI's shape (`arguments` a JSON string) or an object. */
export interface FunctionCallInput {
  name: string;
  arguments: string | Readonly<Record<string, unknown>>;
}

/**
 * Writes tool calls in the MiniMax-M3 format, the inverse of `parseToolCalls`:
 * `NS<tool_call>\n` + `NS<invoke name="f">{arguments}NS</invoke>\n` per call + `NS</tool_call>`.
 * Used for past assistant turns and training data; the built-in chat template renders the
 * same text. Accepts OpenAI `tool_calls` entries or bare `{ name, arguments }`.
 */
export function formatToolCalls(
  calls: readonly (FunctionCallInput | { function: FunctionCallInput })[],
): string {
  const invokes = calls.map((c) => {
    const fn = 'function' in c ? c.function : c;
    return `${NS}<invoke name="${fn.name}">${formatArguments(fn.arguments)}${NS}</invoke>\n`;
  });
  return `${NS}<tool_call>\n${invokes.join('')}${NS}</tool_call>`;
}

/**
 * One value as M3 elements: objects as `NS<key>…NS</key>` per non-null entry, arrays as
 * `NS<item>…NS</item>` per entry, booleans as true/false, strings verbatim, null as nothing.
 */
export function toM3Xml(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value))
    return value.map((v) => `${NS}<item>${toM3Xml(v)}${NS}</item>`).join('');
  if (typeof value === 'object') {
    return Object.entries(value)
      .filter(([, v]) => v !== null && v !== undefined)
      .map(([k, v]) => `${NS}<${k}>${toM3Xml(v)}${NS}</${k}>`)
      .join('');
  }
  return String(value);
}

function formatArguments(args: FunctionCallInput['arguments']): string {
  if (typeof args !== 'string') return toM3Xml(args);
  try {
    return toM3Xml(JSON.parse(args));
  } catch {
    // Not JSON: written as given, as the chat template does.
    return args;
  }
}
