import type { FastifyInstance } from 'fastify';
import { serverError } from '../errors.js';
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
import { sendSse } from '../sse.js';
import type { GrammarConstraint } from '../../engine/grammar/grammar-service.js';
import { ChatChoiceBuilder } from './chat-choice.js';
import { buildChatPrompt, type ChatPrompt } from './chat-prompt.js';
import { choiceConstraints } from './structured-output.js';
import { promptLogprobsOf } from './token-details.js';
import type {
  ChatChunk,
  ChatChunkChoice,
  ChatCompletion,
  ChatRequest,
  PromptLogprobs,
} from './types.js';
import { validateChatRequest } from './validate.js';

interface ChatRun {
  readonly builders: ChatChoiceBuilder[];
  readonly events: AsyncIterable<ChoiceEvent>[];
  readonly clocks: ChoiceClock[];
  readonly usage: UsageTally;
  readonly envelope: Omit<ChatChunk, 'choices'>;
  /** vLLM's `prompt_logprobs`, once the engine has scored the prompt (same for every choice). */
  promptLogprobs?: PromptLogprobs;
}

function startRun(
  ctx: ServerContext,
  req: ChatRequest,
  gen: Generation,
  prompt: ChatPrompt,
  maxTokens: number,
  constraints: readonly GrammarConstraint[] | null,
): ChatRun {
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
        toolCall: prompt.toolInit ? ctx.parsers.toolCall!(prompt.toolInit) : null,
        logprobs: req.logprobs,
        routedExperts: req.returnRoutedExperts,
        tokenizer: ctx.tokenizer,
        prefill: prompt.prefill,
      }),
    );
    const spec = choiceSpec(ctx, req, {
      id,
      promptIds: prompt.ids,
      maxTokens,
      logprobs: req.logprobs,
      index,
      promptLogprobs: req.promptLogprobs ?? null,
      ...(constraints ? { constraint: constraints[index]!.constraint } : {}),
    });
    const release = constraints?.[index]?.dispose;
    const choice = release ? { ...spec, release } : spec;
    run.events.push(runChoice(ctx.engine, ctx.tokenizer, choice, gen.signal));
    run.clocks.push(new ChoiceClock(ctx, gen));
  }
  return run;
}

/** Feeds one choice event to its builder; returns chunk choices to stream, or throws on error. */
function step(ctx: ServerContext, run: ChatRun, index: number, ev: ChoiceEvent): ChatChunkChoice[] {
  const builder = run.builders[index]!;
  const clock = run.clocks[index]!;
  if (ev.type === 'error') {
    clock.finish('error', 0);
    throw serverError(ev.message);
  }
  if (ev.type === 'prompt_logprobs') {
    run.promptLogprobs ??= promptLogprobsOf(ctx.tokenizer, ev.logprobs);
    return [];
  }
  if (ev.type === 'delta') {
    clock.tokens(ev.tokens.length);
    const c = builder.delta(ev.text, ev.tokens);
    return c ? [c] : [];
  }
  // The builder first: only once its parsers are flushed is it known whether calls came out,
  // and /metrics counts the reason the client sees ("tool_calls", as vLLM's label does).
  const chunks = builder.finish(ev.reason);
  clock.finish(builder.finishReason(ev.reason), ev.completionTokens);
  run.usage.addChoice(0, ev.completionTokens, ev.cachedTokens);
  return chunks;
}

async function* streamChat(
  ctx: ServerContext,
  run: ChatRun,
  includeUsage: boolean,
): AsyncGenerator<ChatChunk> {
  const extra = includeUsage ? { usage: null } : {};
  for (let index = 0; index < run.builders.length; index++) {
    const delta = { role: 'assistant' as const, content: '' };
    yield {
      ...run.envelope,
      choices: [{ index, delta, logprobs: null, finish_reason: null }],
      ...extra,
    };
    const prefill = run.builders[index]!.start();
    if (prefill) yield { ...run.envelope, choices: [prefill], ...extra };
  }
  let sentPromptLogprobs = false;
  for await (const { index, value } of mergeAsync(run.events)) {
    const choices = step(ctx, run, index, value);
    if (run.promptLogprobs && !sentPromptLogprobs) {
      sentPromptLogprobs = true;
      yield { ...run.envelope, choices: [], prompt_logprobs: run.promptLogprobs, ...extra };
    }
    for (const c of choices) yield { ...run.envelope, choices: [c], ...extra };
  }
  if (includeUsage) yield { ...run.envelope, choices: [], usage: run.usage.toUsage() };
}

async function collectChat(ctx: ServerContext, run: ChatRun): Promise<ChatCompletion> {
  for (const b of run.builders) b.start();
  for await (const { index, value } of mergeAsync(run.events)) step(ctx, run, index, value);
  return {
    id: run.envelope.id,
    object: 'chat.completion',
    created: run.envelope.created,
    model: run.envelope.model,
    choices: run.builders.map((b) => b.message()),
    usage: run.usage.toUsage(),
    ...(run.promptLogprobs ? { prompt_logprobs: run.promptLogprobs } : {}),
  };
}

export function registerChatCompletions(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/v1/chat/completions', async (request, reply) => {
    const req = validateChatRequest(request.body, ctx.validation);
    checkModel(ctx, req.model);
    const prompt = await buildChatPrompt(ctx, req);
    const maxTokens = resolveMaxTokens(ctx, prompt.ids.length, req.maxTokens, 'messages');
    const constraints = await choiceConstraints(ctx, prompt.constraint, req.n);
    let gen: Generation;
    try {
      gen = beginGeneration(ctx, reply, {
        choices: req.n,
        maxTokens,
        logprobs: req.logprobs,
        routedExperts: req.returnRoutedExperts,
        buffered: !req.stream,
      });
    } catch (e) {
      for (const c of constraints ?? []) c.dispose();
      throw e;
    }
    const run = startRun(ctx, req, gen, prompt, maxTokens, constraints);
    if (req.stream) return sendSse(reply, streamChat(ctx, run, req.includeUsage));
    return collectChat(ctx, run);
  });
}
