import type { StepRunner } from './step-runner.js';

export interface EngineConfig {
  /** Most sequences in the running batch. */
  readonly maxNumSeqs: number;
  /** Token budget of one step: decodes plus prefill chunks (vLLM's max_num_batched_tokens). */
  readonly maxNumBatchedTokens: number;
  /** Share computed full prompt pages between requests. */
  readonly enablePrefixCaching: boolean;
  /** Context limit (prompt + completion); at most, and by default, the runner's. */
  readonly maxModelLen: number;
  /** Run the scheduler's integrity check after every step (tests and soak runs). */
  readonly checkIntegrity: boolean;
  /**
   * Most of the batch slots and KV pages one client request (its choices together) may hold
   * while another request waits; 1 turns the limit off.
   */
  readonly maxRequestShare: number;
  /** Events a consumer may leave unread before its sequence is paused (not scheduled). */
  readonly maxUnreadEvents: number;
  /** A sequence paused this long gives its KV pages back (it is recomputed when resumed). */
  readonly pausePreemptMs: number;
}

export const DEFAULT_ENGINE_CONFIG: Omit<EngineConfig, 'maxModelLen'> = {
  maxNumSeqs: 64,
  maxNumBatchedTokens: 2048,
  enablePrefixCaching: true,
  checkIntegrity: false,
  maxRequestShare: 0.5,
  maxUnreadEvents: 256,
  pausePreemptMs: 2000,
};

/** Fills defaults and checks the result against the runner. */
export function resolveEngineConfig(
  runner: StepRunner,
  partial: Partial<EngineConfig> = {},
): EngineConfig {
  const c: EngineConfig = {
    ...DEFAULT_ENGINE_CONFIG,
    maxModelLen: runner.maxModelLen,
    ...partial,
  };
  for (const k of ['maxNumSeqs', 'maxNumBatchedTokens', 'maxModelLen'] as const) {
    if (!Number.isInteger(c[k]) || c[k] < 1) {
      throw new Error(`engine config: ${k} must be a positive integer, got ${c[k]}`);
    }
  }
  if (!(c.maxRequestShare > 0 && c.maxRequestShare <= 1))
    throw new Error(`engine config: maxRequestShare must be in (0, 1], got ${c.maxRequestShare}`);
  if (c.maxModelLen > runner.maxModelLen) {
    throw new Error(
      `engine config: maxModelLen ${c.maxModelLen} exceeds the model's ${runner.maxModelLen}`,
    );
  }
  return Object.freeze(c);
}
