import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyReply } from 'fastify';
import type { GenerateRequest } from '../engine/engine-types.js';
import type { LogitsConstraint } from '../engine/logits-constraint.js';
import { type AdmissionRequest, checkRequestSize } from './admission.js';
import { ApiError, badRequest, modelNotFound, tooManyRequests } from './errors.js';
import type { SamplingRequest, Usage } from './openai/types.js';
import type { ChoiceFinishReason, ChoiceSpec } from './run-choice.js';
import type { ServerContext } from './server-context.js';
import type { EncodeOpts } from './server-deps.js';
import { watchStall } from './timeouts.js';

/** The choice cap, checked before any tokenizing (the whole admission check runs later). */
export function checkChoiceCount(ctx: ServerContext, choices: number): void {
  checkRequestSize(
    { choices, maxTokens: 1, logprobs: null, routedExperts: false, buffered: false },
    ctx.options,
  );
}

export function checkModel(ctx: ServerContext, model: string | undefined): void {
  if (model !== undefined && model !== ctx.modelName) throw modelNotFound(model);
}

/**
 * Refuses text that must be over the context limit, before tokenizing it: a token covers at
 * most `maxCharsPerToken` UTF-16 units, so a longer text has more than maxModelLen tokens.
 * Tokenizing is linear but synchronous; this keeps a 30 MiB prompt from holding the event
 * loop (and the word cache) for seconds only to be refused afterwards.
 */
export function checkTextLength(
  ctx: ServerContext,
  text: string,
  where: 'messages' | 'prompt',
  param: string = where,
): void {
  const per = ctx.tokenizer.maxCharsPerToken;
  const limit = ctx.engine.maxModelLen;
  if (per === null || text.length <= limit * per) return;
  throw badRequest(
    `This model's maximum context length is ${limit} tokens. However, your ${where} has ` +
      `${text.length} characters, which is at least ${Math.ceil(text.length / per)} tokens. ` +
      `Please reduce the length of the ${where}.`,
    param,
    'context_length_exceeded',
  );
}

/** Inputs from this many UTF-16 units are tokenized with event-loop turns (encodeAsync). */
export const ASYNC_ENCODE_CHARS = 32_768;

/**
 * Token ids of request text. Small inputs are tokenized synchronously (no scheduling
 * latency); large ones through encodeAsync, so a megabyte prompt (seconds of BPE) does not
 * hold up /health or other clients' streams. Both give the same ids.
 */
export function encodeText(ctx: ServerContext, text: string, opts: EncodeOpts): Promise<number[]> {
  if (text.length < ASYNC_ENCODE_CHARS) return Promise.resolve(ctx.tokenizer.encode(text, opts));
  return ctx.tokenizer.encodeAsync(text, opts);
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
    group: a.id, // the choices of one request share the scheduler's fair share
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
  /** Registers a choice; if the response closes before it finishes, it is counted as aborted. */
  track(clock: ChoiceClock): void;
}

/**
 * Takes a concurrency slot (or throws a 429) and ties the request's lifetime to the HTTP
 * response: when the response closes, finished or not, the slot is freed and any engine work
 * still running for it is aborted (a client that disconnects stops its generation).
 */
export function beginGeneration(
  ctx: ServerContext,
  reply: FastifyReply,
  admission: AdmissionRequest,
): Generation {
  checkRequestSize(admission, ctx.options);
  // Gone before we got here: its 'close' has fired already and would never free the slot.
  if (reply.raw.destroyed || reply.raw.socket?.destroyed)
    throw new ApiError(499, 'The client closed the request.', 'invalid_request_error');
  if (ctx.limiter.inUse >= ctx.limiter.limit) throw tooManyRequests(ctx.limiter.limit);
  ctx.sequences.acquire(admission.choices);
  ctx.limiter.tryAcquire();
  const t0 = performance.now();
  const ac = new AbortController();
  const clocks: ChoiceClock[] = [];
  ctx.metrics.generationStarted();
  watchStall(reply.raw, ctx.options.stallTimeoutMs);
  reply.raw.once('close', () => {
    ctx.limiter.release();
    ctx.sequences.release(admission.choices);
    ctx.metrics.generationEnded();
    ac.abort(new Error('response closed'));
    for (const c of clocks) c.finish('abort', c.tokensSeen);
  });
  return {
    signal: ac.signal,
    elapsed: () => (performance.now() - t0) / 1000,
    track: (clock) => void clocks.push(clock),
  };
}

/** Per-choice timing for the TTFT/TPOT/e2e histograms, and the choice's finish count. */
export class ChoiceClock {
  private firstToken: number | null = null;
  private seen = 0;
  private finished = false;

  constructor(
    private readonly ctx: ServerContext,
    private readonly gen: Generation,
  ) {
    gen.track(this);
  }

  /** Engine tokens received so far (what an abort counts as generated). */
  get tokensSeen(): number {
    return this.seen;
  }

  tokens(count: number): void {
    this.seen += count;
    if (count > 0 && this.firstToken === null) this.firstToken = this.gen.elapsed();
  }

  /** `reason` is a finish reason, or "error" for a choice the engine failed. Counted once. */
  finish(reason: ChoiceFinishReason | 'tool_calls' | 'error', completionTokens: number): void {
    if (this.finished) return;
    this.finished = true;
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
