import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyReply } from 'fastify';
import type { GenerateRequest } from '../engine/engine-types.js';
import type { LogitsConstraint } from '../engine/logits-constraint.js';
import { ApiError, badRequest, modelNotFound, tooManyRequests } from './errors.js';
import type { SamplingRequest, Usage } from './openai/types.js';
import type { ChoiceFinishReason, ChoiceSpec } from './run-choice.js';
import type { ServerContext } from './server-context.js';

export function checkModel(ctx: ServerContext, model: string | undefined): void {
  if (model !== undefined && model !== ctx.modelName) throw modelNotFound(model);
}

/**
 * The completion budget: the requested max_tokens if prompt + it fits the context, else the
 * whole remaining context; a 400 worded like OpenAI's context-length error when it cannot fit.
 */
export function resolveMaxTokens(
  ctx: ServerContext,
  promptLen: number,
  requested: number | undefined,
  where: 'messages' | 'prompt',
  param: string = where,
): number {
  const limit = ctx.engine.maxModelLen;
  if (promptLen === 0) throw badRequest(`The ${where} must not be empty (0 tokens).`, param);
  if (requested !== undefined && promptLen + requested > limit)
    throw badRequest(
      `This model's maximum context length is ${limit} tokens. However, you requested ` +
        `${promptLen + requested} tokens (${promptLen} in the ${where}, ${requested} in the ` +
        `completion). Please reduce the length of the ${where} or completion.`,
      param,
      'context_length_exceeded',
    );
  if (promptLen >= limit)
    throw badRequest(
      `This model's maximum context length is ${limit} tokens. However, your ${where} ` +
        `resulted in ${promptLen} tokens, leaving no room for the completion. Please reduce ` +
        `the length of the ${where}.`,
      param,
      'context_length_exceeded',
    );
  return requested ?? limit - promptLen;
}

/** What one choice adds to the request's sampling fields. */
export interface ChoiceArgs {
  id: string;
  promptIds: number[];
  maxTokens: number;
  logprobs: number | null;
  index: number;
  /** Top alternatives per prompt token; null = no prompt logprobs. */
  promptLogprobs?: number | null;
  /** This choice's own constraint (a matcher holds per-sequence state). */
  constraint?: LogitsConstraint;
}

/** Engine request for choice `index` of a request; seeds differ per choice so n>1 varies. */
export function choiceSpec(ctx: ServerContext, s: SamplingRequest, a: ChoiceArgs): ChoiceSpec {
  const d = ctx.options.samplingDefaults;
  const seed = s.seed ?? d.seed;
  const request: GenerateRequest = {
    id: `${a.id}-${a.index}`,
    promptIds: a.promptIds,
    sampling: {
      temperature: s.temperature ?? d.temperature,
      topP: s.topP ?? d.topP,
      topK: s.topK ?? d.topK,
      minP: s.minP ?? d.minP,
      presencePenalty: s.presencePenalty ?? d.presencePenalty,
      frequencyPenalty: s.frequencyPenalty ?? d.frequencyPenalty,
      repetitionPenalty: s.repetitionPenalty ?? d.repetitionPenalty,
      seed: seed === null ? null : seed + a.index,
      ...(s.logitBias ? { logitBias: s.logitBias } : {}),
    },
    maxTokens: a.maxTokens,
    stopTokenIds: s.stopTokenIds,
    ignoreEos: s.ignoreEos,
    logprobs: a.logprobs,
    returnRoutedExperts: s.returnRoutedExperts,
    ...(a.constraint ? { constraint: a.constraint } : {}),
    ...((a.promptLogprobs ?? null) !== null ? { promptLogprobs: a.promptLogprobs } : {}),
  };
  return {
    request,
    stop: s.stop,
    includeStopStr: s.includeStopStrInOutput,
    skipSpecialTokens: s.skipSpecialTokens,
  };
}

/** One generation request in flight: its concurrency slot, abort signal and clock. */
export interface Generation {
  readonly signal: AbortSignal;
  /** Seconds since the request arrived. */
  elapsed(): number;
}

/**
 * Takes a concurrency slot (or throws a 429) and ties the request's lifetime to the HTTP
 * response: when the response closes, finished or not, the slot is freed and any engine work
 * still running for it is aborted (a client that disconnects stops its generation).
 */
export function beginGeneration(ctx: ServerContext, reply: FastifyReply): Generation {
  // Gone before we got here: its 'close' has fired already and would never free the slot.
  if (reply.raw.destroyed || reply.raw.socket?.destroyed)
    throw new ApiError(499, 'The client closed the request.', 'invalid_request_error');
  if (!ctx.limiter.tryAcquire()) throw tooManyRequests(ctx.limiter.limit);
  const t0 = performance.now();
  const ac = new AbortController();
  ctx.metrics.generationStarted();
  reply.raw.once('close', () => {
    ctx.limiter.release();
    ctx.metrics.generationEnded();
    ac.abort(new Error('response closed'));
  });
  return { signal: ac.signal, elapsed: () => (performance.now() - t0) / 1000 };
}

/** Per-choice timing for the TTFT/TPOT/e2e histograms. */
export class ChoiceClock {
  private firstToken: number | null = null;

  constructor(
    private readonly ctx: ServerContext,
    private readonly gen: Generation,
  ) {}

  tokens(count: number): void {
    if (count > 0 && this.firstToken === null) this.firstToken = this.gen.elapsed();
  }

  /** `reason` is a finish reason, or "error" for a choice the engine failed. */
  finish(reason: ChoiceFinishReason | 'error', completionTokens: number): void {
    this.ctx.metrics.choiceDone({
      ttft: this.firstToken,
      e2e: this.gen.elapsed(),
      completionTokens,
      finishReason: reason,
    });
  }
}

/** Usage over all prompts and choices: prompts count once each, however many choices. */
export class UsageTally {
  private prompt = 0;
  private completion = 0;
  private readonly cached = new Map<number, number>();

  addPrompt(tokens: number): void {
    this.prompt += tokens;
  }

  addChoice(promptIdx: number, completionTokens: number, cachedTokens: number): void {
    this.completion += completionTokens;
    this.cached.set(promptIdx, Math.max(this.cached.get(promptIdx) ?? 0, cachedTokens));
  }

  toUsage(): Usage {
    let cached = 0;
    for (const c of this.cached.values()) cached += c;
    return {
      prompt_tokens: this.prompt,
      completion_tokens: this.completion,
      total_tokens: this.prompt + this.completion,
      prompt_tokens_details: { cached_tokens: cached },
    };
  }
}

export function requestId(prefix: string): string {
  return `${prefix}-${randomUUID().replace(/-/g, '')}`;
}

export function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}
