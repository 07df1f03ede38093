import { ApiError, badRequest } from './errors.js';

/** What admission needs to know about one generation request. */
export interface AdmissionRequest {
  /** Prompts × n: the engine sequences the request would start. */
  readonly choices: number;
  /** Completion budget of each choice. */
  readonly maxTokens: number;
  /** Top logprobs per token, or null. */
  readonly logprobs: number | null;
  readonly routedExperts: boolean;
  /** Whether the answer is assembled in memory (not streamed). */
  readonly buffered: boolean;
}

export interface AdmissionLimits {
  /** Most choices (prompts × n) in one request (vLLM: VLLM_MAX_N_SEQUENCES). */
  readonly maxChoicesPerRequest: number;
  /** Most engine sequences admitted over all requests in flight; more get a 429. */
  readonly maxPendingSeqs: number;
  /** Upper bound on what one request's answer may hold in server memory. */
  readonly maxRequestMemoryBytes: number;
}

// Per generated token, what the server keeps for a buffered answer: the event, its text and
// the chunk objects (measured on the CPU server at ~150 B; rounded up).
const BYTES_PER_TOKEN = 256;
// Per logprob entry: token string, logprob, and the object around them.
const BYTES_PER_LOGPROB = 128;
// Routed experts: layers × K small ints per token (MiniMax-M3: 60+ layers × 8).
const BYTES_PER_ROUTED_TOKEN = 4096;

/** The memory a request's answer may need at most, by the constants above. */
export function estimateRequestBytes(r: AdmissionRequest): number {
  const perToken =
    BYTES_PER_TOKEN +
    (r.logprobs === null ? 0 : (r.logprobs + 1) * BYTES_PER_LOGPROB) +
    (r.routedExperts ? BYTES_PER_ROUTED_TOKEN : 0);
  // A stream holds only the engine's bounded event buffer per choice, not the whole answer.
  const tokens = r.buffered ? r.maxTokens : Math.min(r.maxTokens, 64);
  return r.choices * tokens * perToken;
}

/** 400s for a request that no server state could admit: too many choices, too much memory. */
export function checkRequestSize(r: AdmissionRequest, limits: AdmissionLimits): void {
  if (r.choices > limits.maxChoicesPerRequest)
    throw badRequest(
      `The request asks for ${r.choices} choices (prompts × n); the limit is ` +
        `${limits.maxChoicesPerRequest} (--max-choices-per-request).`,
      'n',
      'too_many_choices',
    );
  const bytes = estimateRequestBytes(r);
  if (bytes > limits.maxRequestMemoryBytes) {
    const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
    throw badRequest(
      `The answer to this request could need ${mib(bytes)} of server memory (${r.choices} ` +
        `choices × ${r.maxTokens} tokens${r.logprobs === null ? '' : ` with ${r.logprobs} logprobs`}); ` +
        `the limit is ${mib(limits.maxRequestMemoryBytes)}. Lower n, max_tokens or logprobs, or stream.`,
      'max_tokens',
      'request_too_large',
    );
  }
}

/** Counts engine sequences (choices) in flight against --max-pending-seqs. */
export class SequenceLimiter {
  private active = 0;

  constructor(readonly limit: number) {}

  get inUse(): number {
    return this.active;
  }

  /** Takes `k` sequences, or throws a 429 when they would pass the limit. */
  acquire(k: number): void {
    if (this.active + k > this.limit)
      throw new ApiError(
        429,
        `The server has ${this.active} sequences in flight; ${k} more would pass its limit of ` +
          `${this.limit} (--max-pending-seqs). Retry later.`,
        'rate_limit_error',
        null,
        'rate_limit_exceeded',
      );
    this.active += k;
  }

  release(k: number): void {
    this.active = Math.max(0, this.active - k);
  }
}
