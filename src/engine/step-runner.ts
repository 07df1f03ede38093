import type { ForwardBatch } from '../backend/forward-batch.js';
import type { SamplingParams } from './engine-types.js';
import type { MemoryReport } from './model-runner.js';
import type { SampleResult } from './sampler.js';

/**
 * The sampling state of one request, kept where the runner samples: the host sampler's RNG
 * and token counts (HostSamplingRunner), or a device slot with output-token counts and
 * prompt-presence bits (the CUDA runner). Opened once per request, released when it ends.
 */
export interface SequenceSampling {
  readonly params: SamplingParams;
  /** Frees the state (device memory, host maps). Idempotent. */
  release(): void;
}

/** How one logits row of a step is sampled. */
export interface RowSampling {
  readonly seq: SequenceSampling;
  /** Top logprobs to return (0..20), or null for no logprobs at all. */
  readonly numLogprobs: number | null;
  /**
   * The allowed tokens this step (a LogitsConstraint's mask): ceil(V/32) words, bit t of word
   * t>>>5 set = token t allowed; null = unconstrained. Called once, after the step's `ready`
   * promise resolved (the constraint's mask work overlaps the forward). Absent = no constraint.
   */
  readonly allowedMask?: () => Uint32Array | null;
}

export interface StepResult {
  /** One entry per logits row of the batch: the sampled token, or null for rows not sampled. */
  readonly samples: readonly (SampleResult | null)[];
  /**
   * Host logits [R, V] of every row (before sampling), only when a sequence of the batch has
   * `allLogits` (prompt logprobs): the one step kind that copies logits back.
   */
  readonly logits?: Float32Array;
  /** layer index -> [T, K'] routed expert ids of every token of the batch, when captured. */
  readonly routedExperts?: Readonly<Record<string, Int32Array>>;
}

/**
 * What the engine needs from a model on some backend: one call runs a step and returns the
 * sampled tokens, so a GPU runner can sample on the device and copy back only ids and the
 * requested logprobs (never [B, V] logits). The runner owns the KV cache memory
 * ([numPages, pageSize] slots per layer); the engine owns which pages each sequence uses and
 * only ever asks the runner to write positions numCached .. numCached+numNew-1 of a sequence,
 * never positions inside pages another sequence shares.
 *
 * Sampling semantics (every runner): vLLM's order: allowed-token mask, logit_bias,
 * penalties (repetition over prompt + output, frequency and presence over output), temperature,
 * then min_p, top_k, top_p and one uniform draw; temperature < 1e-5 is greedy; ties go to the
 * lower token id; logprobs are the log-softmax after penalties and temperature, before
 * truncation. The same seed gives the same tokens run to run on the same runner kind.
 */
export interface StepRunner {
  readonly vocabSize: number;
  /** The model runner's weight and KV bytes by dtype, when it knows them. */
  readonly memory?: MemoryReport;
  readonly numPages: number;
  readonly pageSize: number;
  /** Longest context (prompt + completion) the model supports. */
  readonly maxModelLen: number;
  /** From config.json / generation_config.json; may be empty. */
  readonly eosTokenIds: readonly number[];
  /**
   * `step` waits for a device without blocking the thread (and yields to the event loop at
   * least once): the engine then launches the next step before handing out this step's
   * tokens. False for a forward computed on this thread.
   */
  readonly overlapsHost: boolean;
  /** Most top logprobs one row may ask for (the GPU sampler returns at most 20). */
  readonly maxTopLogprobs: number;
  /** Sampling state for a new request; `seed` is the request's (or a random) seed. */
  openSampling(
    params: SamplingParams,
    promptIds: readonly number[],
    seed: number,
  ): SequenceSampling;
  /**
   * Runs one step: writes the new tokens' KV, samples every row whose entry in `rows` (one per
   * logits row, in sequence order) is not null, and records the sampled tokens in their
   * sequence's state (for the penalties).
   */
  step(
    batch: ForwardBatch,
    rows: readonly (RowSampling | null)[],
    ready?: Promise<void>,
  ): Promise<StepResult>;
  /** Releases backend resources; called once by engine shutdown. */
  close?(): void | Promise<void>;
}
