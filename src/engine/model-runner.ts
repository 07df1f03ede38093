import type { ForwardBatch } from '../backend/forward-batch.js';

export interface StepOutput {
  /** [R, V] row-major: one row per logits row of the batch (`logitsFor`), in sequence order. */
  readonly logits: Float32Array;
  /** layer index -> [T, K'] routed expert ids of every token of the batch, when captured. */
  readonly routedExperts?: Readonly<Record<string, Int32Array>>;
}

/**
 * What the engine needs from a model on some backend. The runner owns the KV cache memory
 * ([numPages, pageSize] slots per layer); the engine owns which pages each sequence uses and
 * only ever asks the runner to write positions numCached .. numCached+numNew-1 of a sequence,
 * never positions inside pages another sequence shares.
 */
export interface ModelRunner {
  readonly vocabSize: number;
  readonly numPages: number;
  readonly pageSize: number;
  /** Longest context (prompt + completion) the model supports. */
  readonly maxModelLen: number;
  /** From config.json / generation_config.json; may be empty. */
  readonly eosTokenIds: readonly number[];
  /** Runs one step: writes the new tokens' KV and returns the requested logits rows. */
  forward(batch: ForwardBatch): StepOutput | Promise<StepOutput>;
  /** Releases backend resources; called once by engine shutdown. */
  close?(): void | Promise<void>;
}
