import { badRequest } from '../errors.js';
import { describe, FieldReader, isObject } from './field-reader.js';
import type { ChatRequest, CompletionRequest, PromptInput, SamplingRequest } from './types.js';
import { readLogitBias } from './logit-bias.js';
import { readResponseFormat } from './response-format.js';
import { readMessages, readToolChoice, readTools } from './validate-messages.js';
import { checkToolMessages, checkTools } from './validate-tools.js';

function checkedMessages<T extends Parameters<typeof checkToolMessages>[0]>(m: T): T {
  checkToolMessages(m);
  return m;
}

/** What validation needs to know about the server. */
export interface ValidationContext {
  readonly vocabSize: number;
  /** Whether the server was started with --return-routed-experts. */
  readonly allowRoutedExperts: boolean;
  /** Longest accepted stop string (matching is linear, but each held-back tail costs memory). */
  readonly maxStopStringChars: number;
}

const MAX_N = 128;
const MAX_LOGPROBS = 20;
const MAX_STOP_STRINGS = 64;

function readStop(r: FieldReader, maxChars: number): string[] {
  const v = r.raw('stop');
  if (v === undefined) return [];
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list) || list.some((s) => typeof s !== 'string'))
    r.fail('stop', `must be a string or an array of strings, got ${describe(v)}`);
  const stops = list as string[];
  if (stops.length > MAX_STOP_STRINGS)
    r.fail('stop', `may hold at most ${MAX_STOP_STRINGS} strings, got ${stops.length}`);
  if (stops.some((s) => s === '')) r.fail('stop', 'must not contain empty strings');
  const long = stops.findIndex((s) => s.length > maxChars);
  if (long >= 0)
    r.fail(
      'stop',
      `strings may be at most ${maxChars} characters, stop[${long}] has ${stops[long]!.length}`,
    );
  return stops;
}

function readTokenIds(r: FieldReader, name: string, vocabSize: number): number[] | undefined {
  const list = r.array(name);
  if (list === undefined) return undefined;
  list.forEach((id, i) => {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= vocabSize)
      r.fail(`${name}[${i}]`, `must be a token id in [0, ${vocabSize}), got ${describe(id)}`);
  });
  return list as number[];
}

function readStreamOptions(r: FieldReader, stream: boolean): boolean {
  const opts = r.child('stream_options', true);
  if (opts === undefined) return false;
  if (!stream) r.fail('stream_options', 'is only allowed when "stream" is true');
  return opts.boolean('include_usage') ?? false;
}

function readSampling(r: FieldReader, ctx: ValidationContext, maxTokens: number | undefined) {
  const stream = r.boolean('stream') ?? false;
  const returnRoutedExperts = r.boolean('return_routed_experts') ?? false;
  if (returnRoutedExperts && !ctx.allowRoutedExperts)
    r.fail('return_routed_experts', 'needs the server to be started with --return-routed-experts');
  const s: SamplingRequest = {
    temperature: r.number('temperature', { min: 0, max: 2 }),
    topP: r.number('top_p', { above: 0, max: 1 }),
    topK: r.number('top_k', { integer: true, min: -1 }),
    minP: r.number('min_p', { min: 0, max: 1 }),
    seed: r.number('seed', { integer: true }),
    presencePenalty: r.number('presence_penalty', { min: -2, max: 2 }),
    frequencyPenalty: r.number('frequency_penalty', { min: -2, max: 2 }),
    repetitionPenalty: r.number('repetition_penalty', { above: 0 }),
    maxTokens,
    n: r.number('n', { integer: true, min: 1, max: MAX_N }) ?? 1,
    stop: readStop(r, ctx.maxStopStringChars),
    stopTokenIds: readTokenIds(r, 'stop_token_ids', ctx.vocabSize) ?? [],
    ignoreEos: r.boolean('ignore_eos') ?? false,
    includeStopStrInOutput: r.boolean('include_stop_str_in_output') ?? false,
    skipSpecialTokens: r.boolean('skip_special_tokens') ?? true,
    stream,
    includeUsage: readStreamOptions(r, stream),
    returnRoutedExperts,
    responseFormat: readResponseFormat(r),
  };
  const logitBias = readLogitBias(r, ctx.vocabSize);
  if (logitBias) s.logitBias = logitBias;
  const promptLogprobs = r.number('prompt_logprobs', { integer: true, min: 0, max: MAX_LOGPROBS });
  if (promptLogprobs !== undefined) s.promptLogprobs = promptLogprobs;
  const bestOf = r.number('best_of', { integer: true, min: 1 });
  if (bestOf !== undefined && bestOf !== s.n)
    r.fail('best_of', `is not supported (only best_of == n), got ${bestOf} with n=${s.n}`);
  return s;
}

function rootReader(body: unknown): FieldReader {
  if (!isObject(body))
    throw badRequest(`The request body must be a JSON object, got ${describe(body)}`);
  const r = new FieldReader(body);
  r.string('model');
  return r;
}

/** Validates a /v1/chat/completions body. Unknown fields are ignored. */
export function validateChatRequest(body: unknown, ctx: ValidationContext): ChatRequest {
  const r = rootReader(body);
  const maxTokens =
    r.number('max_completion_tokens', { integer: true, min: 1 }) ??
    r.number('max_tokens', { integer: true, min: 1 });
  const sampling = readSampling(r, ctx, maxTokens);
  const wantLogprobs = r.boolean('logprobs') ?? false;
  const top = r.number('top_logprobs', { integer: true, min: 0, max: MAX_LOGPROBS });
  if (top !== undefined && top > 0 && !wantLogprobs)
    r.fail('top_logprobs', 'needs "logprobs" to be true');
  const tools = readTools(r);
  checkTools(tools);
  return {
    ...sampling,
    model: r.string('model'),
    messages: checkedMessages(readMessages(r)),
    logprobs: wantLogprobs ? (top ?? 0) : null,
    tools,
    toolChoice: readToolChoice(r, tools),
    chatTemplateKwargs: r.object('chat_template_kwargs') ?? {},
    addGenerationPrompt: r.boolean('add_generation_prompt') ?? true,
  };
}

function readPrompts(r: FieldReader, vocabSize: number): PromptInput[] {
  const v = r.raw('prompt');
  if (v === undefined) r.fail('prompt', 'is required');
  if (typeof v === 'string') return [{ text: v }];
  const bad = () =>
    r.fail(
      'prompt',
      `must be a string, an array of strings, an array of token ids or an array of such arrays, got ${describe(v)}`,
    );
  if (!Array.isArray(v) || v.length === 0) return bad();
  if (v.every((p) => typeof p === 'string')) return v.map((text: string) => ({ text }));
  if (v.every((p) => typeof p === 'number'))
    return [{ ids: readTokenIds(r, 'prompt', vocabSize)! }];
  if (!v.every((p) => Array.isArray(p))) return bad();
  return v.map((ids: unknown[], i) => {
    const name = `prompt[${i}]`;
    const out = readTokenIds(new FieldReader({ [name]: ids }), name, vocabSize)!;
    if (out.length === 0) r.fail(`prompt[${i}]`, 'must not be empty');
    return { ids: out };
  });
}

/** Validates a /v1/completions body. Unknown fields are ignored. */
export function validateCompletionRequest(
  body: unknown,
  ctx: ValidationContext,
): CompletionRequest {
  const r = rootReader(body);
  const echo = r.boolean('echo') ?? false;
  // max_tokens 0 only scores the prompt (echo or prompt_logprobs), as OpenAI's legacy API allows.
  const scoring = echo || r.raw('prompt_logprobs') !== undefined;
  const maxTokens = r.number('max_tokens', { integer: true, min: scoring ? 0 : 1 });
  const sampling = readSampling(r, ctx, maxTokens);
  const suffix = r.string('suffix');
  if (suffix) r.fail('suffix', 'is not supported');
  const logprobs = r.number('logprobs', { integer: true, min: 0, max: MAX_LOGPROBS });
  return {
    ...sampling,
    model: r.string('model'),
    prompts: readPrompts(r, ctx.vocabSize),
    logprobs: logprobs ?? null,
    echo,
  };
}
