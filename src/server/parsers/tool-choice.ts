import { M3_TOKENS } from '../../tokenizer/minimax-m3-tokens.js';

import type { ToolSpec } from './tool-call-stream-parser.js';

/** OpenAI `tool_choice`; a named function may use the chat (`function.name`) or flat form. */
export type ToolChoice =
  'none' | 'auto' | 'required' | { type: 'function'; name?: string; function?: { name: string } };

/** What a request's `tool_choice` means for rendering, parsing and checking the output. */
export interface ToolChoicePlan {
  /** Run the tool-call parser; false for "none", where tool markup stays plain content. */
  parse: boolean;
  /** Tools to render into the prompt: none for "none", only the named one for a name. */
  promptTools: readonly ToolSpec[];
  /** The output must contain at least one call ("required" or a named function). */
  required: boolean;
  /** Every call must be to this function. */
  name?: string;
}

/** `tool_choice` contradicts `tools` (a 400 for the client). */
export class ToolChoiceError extends Error {}

/** Resolves `tool_choice` (default: "auto" with tools, "none" without) against `tools`. */
export function planToolChoice(
  choice: ToolChoice | undefined,
  tools: readonly ToolSpec[] = [],
): ToolChoicePlan {
  const c = choice ?? (tools.length > 0 ? 'auto' : 'none');
  if (c === 'none') return { parse: false, promptTools: [], required: false };
  if (c === 'auto') return { parse: true, promptTools: tools, required: false };
  if (tools.length === 0) throw new ToolChoiceError('tool_choice needs at least one tool in tools');
  if (c === 'required') return { parse: true, promptTools: tools, required: true };
  const name = c.function?.name ?? c.name;
  const tool = tools.find((t) => t.function.name === name);
  if (!name || !tool) throw new ToolChoiceError(`tool_choice names unknown function "${name}"`);
  return { parse: true, promptTools: [tool], required: true, name };
}

/** Why the calls made do not satisfy the plan, or undefined when they do. */
export function checkToolChoice(
  plan: ToolChoicePlan,
  calls: readonly { function: { name: string } }[],
): string | undefined {
  if (plan.required && calls.length === 0) {
    return plan.name
      ? `tool_choice requires a call to "${plan.name}" but the model made none`
      : 'tool_choice "required" but the model made no tool call';
  }
  const other = plan.name ? calls.find((c) => c.function.name !== plan.name) : undefined;
  if (other)
    return `tool_choice requires "${plan.name}" but the model called "${other.function.name}"`;
  return undefined;
}

/**
 * Text to append to an M3 prompt so that generation starts inside a call block when a call is
 * required: `</mm:think>` if the turn is still open, `NS<tool_call>\n`, and for a named function
 * `NS<invoke name="f">`. '' when nothing is required, when the prompt opened reasoning (the
 * model thinks first) or when the prompt does not end in an M3 assistant turn.
 *
 * The server must treat the prefill as the first generated text: feed it through the
 * reasoning and tool-call parsers before the model's own output.
 */
export function toolChoicePrefill(plan: ToolChoicePlan, prompt: string): string {
  if (!plan.required) return '';
  const { ns, thinkClose, turnStart, toolCallOpen } = M3_TOKENS;
  let prefix: string;
  if (prompt.endsWith(`${turnStart}ai\n`)) prefix = thinkClose;
  else if (prompt.endsWith(thinkClose)) prefix = '';
  else return '';
  const invoke = plan.name ? `${ns}<invoke name="${plan.name}">` : '';
  return `${prefix}${ns}${toolCallOpen}\n${invoke}`;
}
