import type { FastifyInstance } from 'fastify';
import { badRequest, serverError } from '../errors.js';
import {
  beginGeneration,
  checkModel,
  choiceSpec,
  ChoiceClock,
  type Generation,
  requestId,
  resolveMaxTokens,
  unixNow,
  UsageTally,
} from '../generation.js';
import { mergeAsync } from '../merge-async.js';
import { type ChoiceEvent, runChoice } from '../run-choice.js';
import type { ServerContext } from '../server-context.js';
import type { ToolCallParserInit } from '../server-deps.js';
import { sendSse } from '../sse.js';
import { ChatChoiceBuilder } from './chat-choice.js';
import type { ChatChunk, ChatChunkChoice, ChatCompletion, ChatRequest } from './types.js';
import { validateChatRequest } from './validate.js';

interface ChatPrompt {
  text: string;
  ids: number[];
}

function toolInit(req: ChatRequest): ToolCallParserInit {
  return { tools: req.tools, toolChoice: req.toolChoice };
}

/** Whether this request's output goes through the tool-call parser (400 if it cannot). */
function usesToolParser(ctx: ServerContext, req: ChatRequest): boolean {
  if (req.toolChoice === 'none' || req.tools.length === 0) return false;
  if (!ctx.parsers.toolCall) {
    const choice = typeof req.toolChoice === 'string' ? `"${req.toolChoice}"` : 'a named function';
    throw badRequest(
      `tool_choice ${choice} needs the server to be started with --tool-call-parser`,
      'tool_choice',
    );
  }
  return true;
}

function renderPrompt(ctx: ServerContext, req: ChatRequest, tools: boolean): ChatPrompt {
  if (!ctx.chatTemplate)
    throw badRequest('This model has no chat template; use /v1/completions instead.', 'messages');
  let text: string;
  try {
    text = ctx.chatTemplate(req.messages, {
      tools: req.tools,
      addGenerationPrompt: req.addGenerationPrompt,
      kwargs: req.chatTemplateKwargs,
    });
  } catch (e) {
    throw badRequest(
      `The chat template failed on these messages: ${(e as Error).message}`,
      'messages',
    );
  }
  if (tools && req.toolChoice !== 'auto')
    text += ctx.parsers.toolChoicePrefill?.(toolInit(req)) ?? '';
  return { text, ids: ctx.tokenizer.encode(text, { addSpecialTokens: false }) };
}

interface ChatRun {
  readonly builders: ChatChoiceBuilder[];
  readonly events: AsyncIterable<ChoiceEvent>[];
  readonly clocks: ChoiceClock[];
  readonly usage: UsageTally;
  readonly envelope: Omit<ChatChunk, 'choices'>;
}

interface RunArgs {
  readonly prompt: ChatPrompt;
  readonly maxTokens: number;
  readonly tools: boolean;
}

function startRun(ctx: ServerContext, req: ChatRequest, gen: Generation, a: RunArgs): ChatRun {
  const { prompt, maxTokens, tools } = a;
  const id = requestId('chatcmpl');
  const usage = new UsageTally();
  usage.addPrompt(prompt.ids.length);
  ctx.metrics.promptDone(prompt.ids.length);
  const run: ChatRun = {
    builders: [],
    events: [],
    clocks: [],
    usage,
    envelope: { id, object: 'chat.completion.chunk', created: unixNow(), model: ctx.modelName },
  };
  for (let index = 0; index < req.n; index++) {
    const reasoningInit = { promptText: prompt.text, chatTemplateKwargs: req.chatTemplateKwargs };
    run.builders.push(
      new ChatChoiceBuilder({
        index,
        reasoning: ctx.parsers.reasoning?.(reasoningInit) ?? null,
        toolCall: tools ? ctx.parsers.toolCall!(toolInit(req)) : null,
        logprobs: req.logprobs,
        routedExperts: req.returnRoutedExperts,
        tokenizer: ctx.tokenizer,
      }),
    );
    const spec = choiceSpec(ctx, req, {
      id,
      promptIds: prompt.ids,
      maxTokens,
      logprobs: req.logprobs,
      index,
    });
    run.events.push(runChoice(ctx.engine, ctx.tokenizer, spec, gen.signal));
    run.clocks.push(new ChoiceClock(ctx, gen));
  }
  return run;
}

/** Feeds one choice event to its builder; returns chunk choices to stream, or throws on error. */
function step(run: ChatRun, index: number, ev: ChoiceEvent): ChatChunkChoice[] {
  const builder = run.builders[index]!;
  const clock = run.clocks[index]!;
  if (ev.type === 'error') throw serverError(ev.message);
  if (ev.type === 'delta') {
    clock.tokens(ev.tokens.length);
    const c = builder.delta(ev.text, ev.tokens);
    return c ? [c] : [];
  }
  clock.finish(ev.reason, ev.completionTokens);
  run.usage.addChoice(0, ev.completionTokens, ev.cachedTokens);
  return builder.finish(ev.reason);
}

async function* streamChat(run: ChatRun, includeUsage: boolean): AsyncGenerator<ChatChunk> {
  const extra = includeUsage ? { usage: null } : {};
  for (let index = 0; index < run.builders.length; index++) {
    const delta = { role: 'assistant' as const, content: '' };
    yield {
      ...run.envelope,
      choices: [{ index, delta, logprobs: null, finish_reason: null }],
      ...extra,
    };
  }
  for await (const { index, value } of mergeAsync(run.events)) {
    for (const c of step(run, index, value)) yield { ...run.envelope, choices: [c], ...extra };
  }
  if (includeUsage) yield { ...run.envelope, choices: [], usage: run.usage.toUsage() };
}

async function collectChat(run: ChatRun): Promise<ChatCompletion> {
  for await (const { index, value } of mergeAsync(run.events)) step(run, index, value);
  return {
    id: run.envelope.id,
    object: 'chat.completion',
    created: run.envelope.created,
    model: run.envelope.model,
    choices: run.builders.map((b) => b.message()),
    usage: run.usage.toUsage(),
  };
}

export function registerChatCompletions(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/v1/chat/completions', async (request, reply) => {
    const req = validateChatRequest(request.body, ctx.validation);
    checkModel(ctx, req.model);
    const tools = usesToolParser(ctx, req);
    const prompt = renderPrompt(ctx, req, tools);
    const maxTokens = resolveMaxTokens(ctx, prompt.ids.length, req.maxTokens, 'messages');
    const gen = beginGeneration(ctx, reply);
    const run = startRun(ctx, req, gen, { prompt, maxTokens, tools });
    if (req.stream) return sendSse(reply, streamChat(run, req.includeUsage));
    return collectChat(run);
  });
}
