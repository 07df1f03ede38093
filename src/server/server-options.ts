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
});
