import type { SamplingParams } from '../engine/engine-types.js';

/** HTTP-server settings; the CLI flags of `moeserve serve` map onto these one to one. */
export interface ServerOptions {
  /** Required as "Authorization: Bearer <key>" on /v1/* when set. */
  readonly apiKey: string | null;
  /** Generation requests (chat + completions) in flight at once; more get a 429. */
  readonly maxConcurrentRequests: number;
  /** Largest accepted request body. */
  readonly bodyLimitBytes: number;
  /** Allows the `return_routed_experts` request field. */
  readonly returnRoutedExperts: boolean;
  /** Sampling defaults for fields a request leaves out (e.g. from generation_config.json). */
  readonly samplingDefaults: SamplingParams;
  /** Collect Node process metrics (RSS, heap, event loop lag) into /metrics. */
  readonly processMetrics: boolean;
  /** Origins a keyless server accepts (--allowed-origins); empty: loopback ones; "*": any. */
  readonly allowedOrigins: readonly string[];
  /** Most choices (prompts × n) in one request. */
  readonly maxChoicesPerRequest: number;
  /** Most engine sequences (choices) in flight over all requests; more get a 429. */
  readonly maxPendingSeqs: number;
  /** Bound on the server memory one request's answer may need (estimated at admission). */
  readonly maxRequestMemoryBytes: number;
  /** Longest stop string, in characters. */
  readonly maxStopStringChars: number;
  /** Time to receive a request's headers. */
  readonly headersTimeoutMs: number;
  /** Time to receive a whole request (headers and body). */
  readonly requestTimeoutMs: number;
  /** Idle keep-alive connections close after this. */
  readonly keepAliveTimeoutMs: number;
  /** A response whose client stops reading for this long is closed (its generation aborted). */
  readonly stallTimeoutMs: number;
  /** How long a graceful shutdown waits for requests in flight before cutting them off. */
  readonly shutdownTimeoutMs: number;
  /**
   * Read special-token strings in message text as special tokens (by default they are text,
   * so a client cannot forge the chat format's markers).
   */
  readonly allowSpecialTokensInContent: boolean;
  /** Where server errors (5xx) are reported whether or not request logging is on. */
  readonly logError: (line: string) => void;
}

/** OpenAI's defaults: temperature 1, everything else off. */
export const OPENAI_SAMPLING_DEFAULTS: SamplingParams = Object.freeze({
  temperature: 1,
  topP: 1,
  topK: 0,
  minP: 0,
  presencePenalty: 0,
  frequencyPenalty: 0,
  repetitionPenalty: 1,
  seed: null,
});

export const DEFAULT_SERVER_OPTIONS: ServerOptions = Object.freeze({
  apiKey: null,
  maxConcurrentRequests: 256,
  bodyLimitBytes: 32 * 1024 * 1024,
  returnRoutedExperts: false,
  samplingDefaults: OPENAI_SAMPLING_DEFAULTS,
  processMetrics: true,
  allowedOrigins: [],
  maxChoicesPerRequest: 128,
  maxPendingSeqs: 1024,
  maxRequestMemoryBytes: 512 * 2 ** 20,
  maxStopStringChars: 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  stallTimeoutMs: 60_000,
  shutdownTimeoutMs: 30_000,
  allowSpecialTokensInContent: false,
  logError: (line: string) => console.error(line),
});
