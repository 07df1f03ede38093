/**
 * The contract between the server (text, HTTP) and the engine (tokens, batching).
 * The engine sees token ids only; the server owns tokenization, chat templates,
 * stop strings (it aborts the request when one appears) and output parsing.
 */
import type { LogitsConstraint } from './logits-constraint.js';
import type { MemoryReport } from './model-runner.js';

export interface SamplingParams {
  /** 0 = greedy. */
  readonly temperature: number;
  readonly topP: number;
  /** 0 or -1 = disabled. */
  readonly topK: number;
  readonly minP: number;
  readonly presencePenalty: number;
  readonly frequencyPenalty: number;
  readonly repetitionPenalty: number;
  /** Seeded per-request RNG when set; otherwise a random seed. */
  readonly seed: number | null;
  /**
   * OpenAI `logit_bias`: [token id, bias] pairs added to the logits before the penalties
   * (after a constraint's mask). The server clamps biases to [-100, 100].
   */
  readonly logitBias?: ReadonlyArray<readonly [tokenId: number, bias: number]>;
}

export interface GenerateRequest {
  readonly id: string;
  /**
   * The client request this sequence belongs to (the n choices and prompts of one request
   * share it): the scheduler's fair share is per group. Default: the id.
   */
  readonly group?: string;
  readonly promptIds: readonly number[];
  readonly sampling: SamplingParams;
  readonly maxTokens: number;
  /** Token ids that end generation with finish_reason "stop" (EOS ids are added by the engine unless ignoreEos). */
  readonly stopTokenIds: readonly number[];
  readonly ignoreEos: boolean;
  /** Number of top logprobs to return per token; null = no logprobs. */
  readonly logprobs: number | null;
  readonly returnRoutedExperts: boolean;
  /** Allowed next tokens (structured outputs); its termination finishes the request "stop". */
  readonly constraint?: LogitsConstraint;
  /**
   * Logprobs of the prompt tokens with this many top alternatives each (vLLM's
   * `prompt_logprobs`); null/absent = none. Such a request bypasses the prefix cache, and with
   * maxTokens 0 it only scores the prompt.
   */
  readonly promptLogprobs?: number | null;
}

/** One prompt position's logprob: of the actual token and the top alternatives there. */
export interface PromptTokenLogprob {
  readonly tokenId: number;
  readonly logprob: number;
  /** 1 + how many tokens were more likely (vLLM's rank). */
  readonly rank: number;
  readonly top: readonly { readonly tokenId: number; readonly logprob: number }[];
}

/**
 * Sent once, before the first token: entry i is prompt position i + 1 (the first prompt token
 * has no logprob). Raw log-softmax of the model's logits (no penalties, temperature or mask).
 */
export interface PromptLogprobsEvent {
  readonly type: 'prompt_logprobs';
  readonly logprobs: readonly PromptTokenLogprob[];
}

export interface TokenEvent {
  readonly type: 'token';
  readonly tokenId: number;
  readonly logprob?: number;
  readonly topLogprobs?: readonly { readonly tokenId: number; readonly logprob: number }[];
  /** layer index -> routed expert ids of this token (the K routed ones; K+1 with shared fusion). */
  readonly routedExperts?: Readonly<Record<string, readonly number[]>>;
  /**
   * True when this token ends generation with finish "stop" (an EOS or stop token id). It is
   * counted in completionTokens; the server decides whether to render it (OpenAI does not).
   */
  readonly isStopToken?: boolean;
}

export interface FinishEvent {
  readonly type: 'finish';
  /** "stop": a stop token (EOS) was produced; "length": max_tokens or the context limit; "abort": cancelled. */
  readonly reason: 'stop' | 'length' | 'abort';
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Prompt tokens served from the prefix cache. */
  readonly cachedTokens: number;
}

export interface ErrorEvent {
  readonly type: 'error';
  readonly message: string;
}

export type EngineEvent = TokenEvent | FinishEvent | ErrorEvent | PromptLogprobsEvent;

export interface EngineStats {
  readonly numRunning: number;
  readonly numWaiting: number;
  readonly kvPagesUsed: number;
  readonly kvPagesTotal: number;
  readonly prefixCacheHitTokens: number;
  readonly promptTokensTotal: number;
  /** Times a running request was preempted (its pages freed, recomputed later). */
  readonly numPreemptions?: number;
  /** Free pages that still hold a reusable prefix-cache entry (counted as free, not used). */
  readonly kvPagesCached?: number;
  /** Weight and KV-cache bytes by dtype, when the runner reports them. */
  readonly memory?: MemoryReport;
}

export interface Engine {
  /** Streams events for one request; aborting `signal` ends it with a finish "abort" and frees its pages. */
  generate(req: GenerateRequest, signal?: AbortSignal): AsyncIterable<EngineEvent>;
  stats(): EngineStats;
  /** Max context length (prompt + completion). */
  readonly maxModelLen: number;
  /** Stops accepting requests, finishes in-flight ones, then releases resources. */
  shutdown(): Promise<void>;
}
