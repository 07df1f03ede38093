import type { FastifyInstance } from 'fastify';
import type { TokenEvent } from '../../engine/engine-types.js';
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
import { type ChoiceEvent, type ChoiceFinishReason, runChoice } from '../run-choice.js';
import type { ServerContext } from '../server-context.js';
import { sendSse } from '../sse.js';
import {
  appendRoutedExperts,
  completionLogprobs,
  mergeCompletionLogprobs,
} from './token-details.js';
import type {
  Completion,
  CompletionChoice,
  CompletionLogprobs,
  CompletionRequest,
  RoutedExperts,
} from './types.js';
import { validateCompletionRequest } from './validate.js';

/** One completion choice: its text so far and, when asked for, logprobs and routed experts. */
class CompletionChoiceState {
  text = '';
  reason: ChoiceFinishReason = 'abort';
  readonly logprobs: CompletionLogprobs = {
    tokens: [],
    token_logprobs: [],
    top_logprobs: [],
    text_offset: [],
  };
  readonly routed: RoutedExperts = {};
  private offset = 0;

  constructor(
    readonly index: number,
    readonly promptIdx: number,
    readonly clock: ChoiceClock,
  ) {}

  /** Records a delta; returns the chunk choice for it (null when there is nothing to send). */
  delta(ctx: ServerContext, req: CompletionRequest, text: string, tokens: readonly TokenEvent[]) {
    this.text += text;
    const choice: CompletionChoice = {
      index: this.index,
      text,
      logprobs: null,
      finish_reason: null,
    };
    if (req.logprobs !== null && tokens.length > 0) {
      choice.logprobs = completionLogprobs(ctx.tokenizer, tokens, req.logprobs, this.offset);
      this.offset = choice.logprobs.text_offset.at(-1)! + choice.logprobs.tokens.at(-1)!.length;
      mergeCompletionLogprobs(this.logprobs, choice.logprobs);
    }
    if (req.returnRoutedExperts && tokens.length > 0) {
      choice.routed_experts = {};
      appendRoutedExperts(choice.routed_experts, tokens);
      appendRoutedExperts(this.routed, tokens);
    }
    return text || choice.logprobs || choice.routed_experts ? choice : null;
  }

  result(req: CompletionRequest): CompletionChoice {
    const choice: CompletionChoice = {
      index: this.index,
      text: this.text,
      logprobs: req.logprobs === null ? null : this.logprobs,
      finish_reason: this.reason,
    };
    if (req.returnRoutedExperts) choice.routed_experts = this.routed;
    return choice;
  }
}

interface CompletionRun {
  readonly choices: CompletionChoiceState[];
  readonly events: AsyncIterable<ChoiceEvent>[];
  readonly usage: UsageTally;
  readonly envelope: Omit<Completion, 'choices'>;
}

function startRun(
  ctx: ServerContext,
  req: CompletionRequest,
  gen: Generation,
  prompts: { ids: number[]; maxTokens: number }[],
): CompletionRun {
  const id = requestId('cmpl');
  const envelope = {
    id,
    object: 'text_completion' as const,
    created: unixNow(),
    model: ctx.modelName,
  };
  const run: CompletionRun = { choices: [], events: [], usage: new UsageTally(), envelope };
  prompts.forEach((p, promptIdx) => {
    run.usage.addPrompt(p.ids.length);
    ctx.metrics.promptDone(p.ids.length);
    for (let j = 0; j < req.n; j++) {
      const index = promptIdx * req.n + j;
      run.choices.push(new CompletionChoiceState(index, promptIdx, new ChoiceClock(ctx, gen)));
      const spec = choiceSpec(ctx, req, {
        id,
        promptIds: p.ids,
        maxTokens: p.maxTokens,
        logprobs: req.logprobs,
        index,
      });
      run.events.push(runChoice(ctx.engine, ctx.tokenizer, spec, gen.signal));
    }
  });
  return run;
}

function step(
  ctx: ServerContext,
  req: CompletionRequest,
  run: CompletionRun,
  index: number,
  ev: ChoiceEvent,
): CompletionChoice | null {
  const c = run.choices[index]!;
  if (ev.type === 'error') {
    c.clock.finish('error', 0);
    throw serverError(ev.message);
  }
  if (ev.type === 'delta') {
    c.clock.tokens(ev.tokens.length);
    return c.delta(ctx, req, ev.text, ev.tokens);
  }
  c.reason = ev.reason;
  c.clock.finish(ev.reason, ev.completionTokens);
  run.usage.addChoice(c.promptIdx, ev.completionTokens, ev.cachedTokens);
  return { index: c.index, text: '', logprobs: null, finish_reason: ev.reason };
}

async function* streamCompletion(
  ctx: ServerContext,
  req: CompletionRequest,
  run: CompletionRun,
): AsyncGenerator<Completion> {
  const extra = req.includeUsage ? { usage: null } : {};
  for await (const { index, value } of mergeAsync(run.events)) {
    const c = step(ctx, req, run, index, value);
    if (c) yield { ...run.envelope, choices: [c], ...extra };
  }
  if (req.includeUsage) yield { ...run.envelope, choices: [], usage: run.usage.toUsage() };
}

async function collectCompletion(
  ctx: ServerContext,
  req: CompletionRequest,
  run: CompletionRun,
): Promise<Completion> {
  for await (const { index, value } of mergeAsync(run.events)) step(ctx, req, run, index, value);
  return {
    ...run.envelope,
    choices: run.choices.map((c) => c.result(req)),
    usage: run.usage.toUsage(),
  };
}

export function registerCompletions(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/v1/completions', async (request, reply) => {
    const req = validateCompletionRequest(request.body, ctx.validation);
    checkModel(ctx, req.model);
    const prompts = req.prompts.map((p, i) => {
      const ids = 'ids' in p ? p.ids : ctx.tokenizer.encode(p.text, { addSpecialTokens: true });
      const param = req.prompts.length > 1 ? `prompt[${i}]` : 'prompt';
      const maxTokens = resolveMaxTokens(ctx, ids.length, req.maxTokens, 'prompt', param);
      return { ids, maxTokens };
    });
    const gen = beginGeneration(ctx, reply);
    const run = startRun(ctx, req, gen, prompts);
    if (req.stream) return sendSse(reply, streamCompletion(ctx, req, run));
    return collectCompletion(ctx, req, run);
  });
}
