import type { FastifyInstance } from 'fastify';
import type { PromptTokenLogprob, TokenEvent } from '../../engine/engine-types.js';
import { serverError } from '../errors.js';
import {
  beginGeneration,
  checkChoiceCount,
  checkModel,
  checkTextLength,
  choiceSpec,
  ChoiceClock,
  encodeText,
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
  echoLogprobs,
  mergeCompletionLogprobs,
  promptLogprobsOf,
} from './token-details.js';
import type {
  Completion,
  CompletionChoice,
  CompletionLogprobs,
  CompletionRequest,
  PromptLogprobs,
  RoutedExperts,
} from './types.js';
import { choiceConstraints, responseFormatPlan } from './structured-output.js';
import { validateCompletionRequest } from './validate.js';
import type { GrammarConstraint } from '../../engine/grammar/grammar-service.js';

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
  promptLogprobs: PromptLogprobs | undefined;
  private offset = 0;

  constructor(
    readonly index: number,
    readonly promptIdx: number,
    readonly clock: ChoiceClock,
    readonly prompt: CompletionPrompt,
  ) {}

  /**
   * The echoed prompt (OpenAI `echo`), with its logprobs once `entries` (the engine's prompt
   * logprobs) are known; also records vLLM's `prompt_logprobs`. Returns the chunk choice.
   */
  echo(
    ctx: ServerContext,
    req: CompletionRequest,
    entries: readonly PromptTokenLogprob[] | null,
  ): CompletionChoice | null {
    if (entries && req.promptLogprobs !== undefined)
      this.promptLogprobs = promptLogprobsOf(ctx.tokenizer, entries);
    if (!req.echo) return null;
    const text = this.prompt.text;
    this.text += text;
    const choice: CompletionChoice = {
      index: this.index,
      text,
      logprobs: null,
      finish_reason: null,
    };
    if (req.logprobs !== null && entries) {
      choice.logprobs = echoLogprobs(ctx.tokenizer, this.prompt.ids, entries, req.logprobs);
      mergeCompletionLogprobs(this.logprobs, choice.logprobs);
    }
    this.offset = text.length;
    return choice;
  }

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
    if (this.promptLogprobs) choice.prompt_logprobs = this.promptLogprobs;
    return choice;
  }
}

/** One prompt of a completions request: its ids, echo text and completion budget. */
interface CompletionPrompt {
  ids: number[];
  /** What `echo` returns: the prompt string as given, or the ids decoded. */
  text: string;
  maxTokens: number;
}

/** Whether the engine must score the prompt: echo with logprobs, or vLLM's prompt_logprobs. */
function promptLogprobsFor(req: CompletionRequest): number | null {
  const echoTop = req.echo && req.logprobs !== null ? req.logprobs : null;
  if (req.promptLogprobs === undefined) return echoTop;
  return Math.max(echoTop ?? 0, req.promptLogprobs);
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
  prompts: CompletionPrompt[],
  constraints: readonly GrammarConstraint[] | null,
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
      const clock = new ChoiceClock(ctx, gen);
      run.choices.push(new CompletionChoiceState(index, promptIdx, clock, p));
      const spec = choiceSpec(ctx, req, {
        id,
        promptIds: p.ids,
        maxTokens: p.maxTokens,
        logprobs: req.logprobs,
        index,
        promptLogprobs: promptLogprobsFor(req),
        ...(constraints ? { constraint: constraints[index]!.constraint } : {}),
      });
      const release = constraints?.[index]?.dispose;
      const choice = release ? { ...spec, release } : spec;
      run.events.push(runChoice(ctx.engine, ctx.tokenizer, choice, gen.signal));
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
  if (ev.type === 'prompt_logprobs') return c.echo(ctx, req, ev.logprobs);
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
  for (const c of echoWithoutScores(ctx, req, run))
    yield { ...run.envelope, choices: [c], ...extra };
  for await (const { index, value } of mergeAsync(run.events)) {
    const c = step(ctx, req, run, index, value);
    if (c) yield { ...run.envelope, choices: [c], ...extra };
  }
  if (req.includeUsage) yield { ...run.envelope, choices: [], usage: run.usage.toUsage() };
}

/** Echo chunks for choices whose prompt is not scored (no prompt_logprobs event comes). */
function echoWithoutScores(
  ctx: ServerContext,
  req: CompletionRequest,
  run: CompletionRun,
): CompletionChoice[] {
  if (!req.echo || promptLogprobsFor(req) !== null) return [];
  return run.choices.map((c) => c.echo(ctx, req, null)).filter((c) => c !== null);
}

async function collectCompletion(
  ctx: ServerContext,
  req: CompletionRequest,
  run: CompletionRun,
): Promise<Completion> {
  echoWithoutScores(ctx, req, run);
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
    checkChoiceCount(ctx, req.prompts.length * req.n);
    const prompts: CompletionPrompt[] = [];
    for (const [i, p] of req.prompts.entries()) {
      const param = req.prompts.length > 1 ? `prompt[${i}]` : 'prompt';
      if ('text' in p) checkTextLength(ctx, p.text, 'prompt', param);
      const ids = 'ids' in p ? p.ids : await encodeText(ctx, p.text, { addSpecialTokens: true });
      const maxTokens = resolveMaxTokens(ctx, ids.length, req.maxTokens, 'prompt', param);
      const text = 'text' in p ? p.text : ctx.tokenizer.decode(ids, { skipSpecialTokens: false });
      prompts.push({ ids, text, maxTokens });
    }
    const plan = responseFormatPlan(req.responseFormat, 'none');
    const constraints = await choiceConstraints(ctx, plan, prompts.length * req.n);
    let gen: Generation;
    try {
      gen = beginGeneration(ctx, reply, {
        choices: prompts.length * req.n,
        maxTokens: Math.max(...prompts.map((p) => p.maxTokens)),
        logprobs: req.logprobs,
        routedExperts: req.returnRoutedExperts,
        buffered: !req.stream,
      });
    } catch (e) {
      for (const c of constraints ?? []) c.dispose();
      throw e;
    }
    const run = startRun(ctx, req, gen, prompts, constraints);
    if (req.stream) return sendSse(reply, streamCompletion(ctx, req, run));
    return collectCompletion(ctx, req, run);
  });
}
