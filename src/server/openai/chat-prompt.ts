import { badRequest } from '../errors.js';
import { checkTextLength } from '../generation.js';
import type { ServerContext } from '../server-context.js';
import type { ToolCallParserInit } from '../server-deps.js';
import type { ChatRequest, FunctionTool } from './types.js';

/** The prompt of one chat request and how its output is to be parsed. */
export interface ChatPrompt {
  /** The rendered template, before any prefill. */
  readonly text: string;
  /** Text appended after `text` to force a tool call; parsed as the start of the output. */
  readonly prefill: string;
  /** Token ids of text + prefill. */
  readonly ids: number[];
  /** Set when the output goes through the tool-call parser. */
  readonly toolInit: ToolCallParserInit | null;
}

/** OpenAI semantics: "none" shows the model no tools, a named choice only that one. */
function promptTools(req: ChatRequest): readonly FunctionTool[] {
  const choice = req.toolChoice;
  if (choice === 'none') return [];
  if (typeof choice === 'object') return req.tools.filter((t) => t.function.name === choice.name);
  return req.tools;
}

/** The tool-call parser settings for this request, or null (400 if calls need a parser). */
function toolParserInit(ctx: ServerContext, req: ChatRequest): ToolCallParserInit | null {
  if (req.toolChoice === 'none' || req.tools.length === 0) return null;
  if (!ctx.parsers.toolCall) {
    const choice = typeof req.toolChoice === 'string' ? `"${req.toolChoice}"` : 'a named function';
    throw badRequest(
      `tool_choice ${choice} needs the server to be started with --tool-call-parser`,
      'tool_choice',
    );
  }
  return { tools: req.tools, toolChoice: req.toolChoice, stream: req.stream };
}

function render(ctx: ServerContext, req: ChatRequest): string {
  if (!ctx.chatTemplate)
    throw badRequest('This model has no chat template; use /v1/completions instead.', 'messages');
  try {
    return ctx.chatTemplate(req.messages, {
      tools: promptTools(req),
      addGenerationPrompt: req.addGenerationPrompt,
      kwargs: req.chatTemplateKwargs,
    });
  } catch (e) {
    throw badRequest(
      `The chat template failed on these messages: ${(e as Error).message}`,
      'messages',
    );
  }
}

/** Renders, adds a forced-call prefill for "required"/named tool_choice, and tokenizes. */
export function buildChatPrompt(ctx: ServerContext, req: ChatRequest): ChatPrompt {
  const toolInit = toolParserInit(ctx, req);
  const text = render(ctx, req);
  const forced = toolInit !== null && req.toolChoice !== 'auto';
  const prefill = forced
    ? (ctx.parsers.toolChoicePrefill?.({ ...toolInit, promptText: text }) ?? '')
    : '';
  checkTextLength(ctx, text + prefill, 'messages');
  const ids = ctx.tokenizer.encode(text + prefill, { addSpecialTokens: false });
  return { text, prefill, ids, toolInit };
}
