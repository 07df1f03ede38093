import { badRequest } from '../errors.js';
import { checkTextLength, encodeText } from '../generation.js';
import { ContentSpecials } from './content-specials.js';
import type { ServerContext } from '../server-context.js';
import type { ToolCallParserInit } from '../server-deps.js';
import {
  chatReasoningStart,
  type ConstraintPlan,
  responseFormatPlan,
} from './structured-output.js';
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
  /** The grammar the output must follow (forced tool call or response_format), or null. */
  readonly constraint: ConstraintPlan | null;
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

function render(
  ctx: ServerContext,
  req: ChatRequest,
  messages: ChatRequest['messages'] = req.messages,
): string {
  if (!ctx.chatTemplate)
    throw badRequest('This model has no chat template; use /v1/completions instead.', 'messages');
  try {
    return ctx.chatTemplate(messages, {
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

/**
 * The grammar of a forced call ("required"/named tool_choice) or of `response_format`; null
 * when neither applies. A forced call without a grammar backend falls back to the prefill.
 */
function constraintPlan(
  ctx: ServerContext,
  req: ChatRequest,
  toolInit: ToolCallParserInit | null,
  text: string,
): ConstraintPlan | null {
  const reasoning = chatReasoningStart(ctx, text);
  const grammar = toolInit && ctx.grammar ? ctx.parsers.toolCallGrammar?.(toolInit) : null;
  if (grammar) {
    if (req.responseFormat)
      throw badRequest(
        'response_format cannot be combined with tool_choice "required" or a named function',
        'response_format',
      );
    return { spec: { kind: 'ebnf', grammar }, param: 'tools', reasoning };
  }
  return responseFormatPlan(req.responseFormat, reasoning);
}

/** Renders, plans a forced call (grammar, else prefill) or response_format, and tokenizes. */
export async function buildChatPrompt(ctx: ServerContext, req: ChatRequest): Promise<ChatPrompt> {
  const toolInit = toolParserInit(ctx, req);
  const specials = ctx.options.allowSpecialTokensInContent
    ? null
    : new ContentSpecials(ctx.tokenizer.specialTokens);
  const rendered = render(ctx, req, specials?.protect(req.messages));
  const text = specials ? specials.restore(rendered) : rendered;
  const constraint = constraintPlan(ctx, req, toolInit, text);
  const forced = toolInit !== null && req.toolChoice !== 'auto' && constraint?.param !== 'tools';
  const prefill = forced
    ? (ctx.parsers.toolChoicePrefill?.({ ...toolInit, promptText: text }) ?? '')
    : '';
  checkTextLength(ctx, text + prefill, 'messages');
  const ids = specials
    ? await specials.encode((t, o) => encodeText(ctx, t, o), rendered + prefill)
    : await encodeText(ctx, text + prefill, { addSpecialTokens: false });
  return { text, prefill, ids, toolInit, constraint };
}
