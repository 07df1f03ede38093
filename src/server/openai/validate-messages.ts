import { badRequest } from '../errors.js';
import { describe, FieldReader, isObject } from './field-reader.js';
import type { ChatMessage, FunctionTool, ToolChoice } from './types.js';

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);

/** Joins text content parts; non-text parts (images, audio) are refused: the model reads text. */
function readContent(r: FieldReader, role: string): string | null {
  const v = r.raw('content');
  if (v === undefined) {
    if (role === 'assistant') return null;
    r.fail('content', 'is required');
  }
  if (typeof v === 'string') return v;
  if (!Array.isArray(v))
    r.fail('content', `must be a string or an array of content parts, got ${describe(v)}`);
  const texts = v.map((part, i) => {
    const p = r.element('content', i, part);
    const type = p.string('type');
    if (type !== 'text')
      p.fail(
        'type',
        `must be "text" (only text content parts are supported), got ${describe(type)}`,
      );
    const text = p.string('text');
    return text ?? p.fail('text', 'is required');
  });
  // vLLM's "string" content format joins parts with newlines.
  return texts.join('\n');
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function readToolCalls(r: FieldReader): ChatMessage['tool_calls'] {
  const calls = r.array('tool_calls');
  if (calls === undefined) return undefined;
  return calls.map((c, i) => {
    const cr = r.element('tool_calls', i, c);
    const fn = cr.child('function');
    const name = fn.requiredString('name');
    const args = fn.string('arguments') ?? '{}';
    return {
      id: cr.string('id') ?? `call_${i}`,
      type: 'function' as const,
      function: { name, arguments: parseArguments(args) },
    };
  });
}

function readMessage(r: FieldReader): ChatMessage {
  const role = r.string('role');
  if (role === undefined) r.fail('role', 'is required');
  if (!ROLES.has(role))
    r.fail('role', `must be one of ${[...ROLES].join(', ')}, got ${describe(role)}`);
  const msg: ChatMessage = { role, content: readContent(r, role) };
  const name = r.string('name');
  if (name !== undefined) msg.name = name;
  const toolCalls = readToolCalls(r);
  if (toolCalls !== undefined) msg.tool_calls = toolCalls;
  const toolCallId = r.string('tool_call_id');
  if (toolCallId !== undefined) msg.tool_call_id = toolCallId;
  // `reasoning` is vLLM's newer name for the same field.
  const reasoning = r.string('reasoning_content') ?? r.string('reasoning');
  if (reasoning !== undefined) msg.reasoning_content = reasoning;
  return msg;
}

export function readMessages(r: FieldReader): ChatMessage[] {
  const list = r.array('messages');
  if (list === undefined) r.fail('messages', 'is required');
  if (list.length === 0) r.fail('messages', 'must contain at least one message');
  return list.map((m, i) => readMessage(r.element('messages', i, m)));
}

export function readTools(r: FieldReader): FunctionTool[] {
  const list = r.array('tools') ?? [];
  return list.map((t, i) => {
    const tr = r.element('tools', i, t);
    const type = tr.string('type') ?? 'function';
    if (type !== 'function') tr.fail('type', `must be "function", got ${describe(type)}`);
    const fn = tr.child('function');
    const name = fn.requiredString('name');
    const tool: FunctionTool = { type: 'function', function: { name } };
    const description = fn.string('description');
    if (description !== undefined) tool.function.description = description;
    const parameters = fn.object('parameters');
    if (parameters !== undefined) tool.function.parameters = parameters;
    return tool;
  });
}

export function readToolChoice(r: FieldReader, tools: readonly FunctionTool[]): ToolChoice {
  const v = r.raw('tool_choice');
  if (v === undefined) return tools.length > 0 ? 'auto' : 'none';
  if (v === 'none' || v === 'auto' || v === 'required') {
    if (v !== 'none' && tools.length === 0)
      r.fail('tool_choice', `"${v}" needs a non-empty "tools" list`);
    return v;
  }
  if (!isObject(v))
    r.fail('tool_choice', `must be "none", "auto", "required" or an object, got ${describe(v)}`);
  const fn = r.child('tool_choice').child('function');
  const name = fn.requiredString('name');
  if (!tools.some((t) => t.function.name === name))
    throw badRequest(
      `tool_choice names the function "${name}", which is not in "tools"`,
      'tool_choice',
    );
  return { type: 'function', name };
}
