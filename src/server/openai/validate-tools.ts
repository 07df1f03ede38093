import { Ajv } from 'ajv';
import { badRequest } from '../errors.js';
import type { ChatMessage, FunctionTool } from './types.js';

/** OpenAI's rule for function names; anything else could carry markup into the prompt. */
const TOOL_NAME = /^[a-zA-Z0-9_.-]{1,64}$/;

/** One compiler for the server: compiling only checks that a schema is a valid JSON Schema. */
const ajv = new Ajv({ strict: false, validateSchema: true, allErrors: false });

/**
 * OpenAI-style checks on `tools`: names match ^[a-zA-Z0-9_.-]{1,64}$ and are unique, and
 * `parameters` is a valid JSON Schema; each failure is a 400 naming the tool.
 */
export function checkTools(tools: readonly FunctionTool[]): void {
  const seen = new Set<string>();
  tools.forEach((t, i) => {
    const name = t.function.name;
    const param = `tools[${i}].function.name`;
    if (!TOOL_NAME.test(name))
      throw badRequest(
        `Tool name ${JSON.stringify(name.slice(0, 80))} is invalid: use at most 64 characters ` +
          'from a-z, A-Z, 0-9, "_", "-" and ".".',
        param,
      );
    if (seen.has(name)) throw badRequest(`Tool name "${name}" is given twice.`, param);
    seen.add(name);
    const schema = t.function.parameters;
    if (schema === undefined) return;
    try {
      ajv.compile(schema);
    } catch (e) {
      throw badRequest(
        `The parameters of tool "${name}" are not a valid JSON Schema: ${(e as Error).message}`,
        `tools[${i}].function.parameters`,
      );
    }
  });
}

/** Tool results must say which call they answer (OpenAI: `tool_call_id` is required). */
export function checkToolMessages(messages: readonly ChatMessage[]): void {
  messages.forEach((m, i) => {
    if (m.role === 'tool' && (m.tool_call_id === undefined || m.tool_call_id === ''))
      throw badRequest(
        'A message with role "tool" needs "tool_call_id" (the id of the call it answers).',
        `messages[${i}].tool_call_id`,
      );
  });
}
