import type { ForwardBatch } from '../backend/forward-batch.js';

export interface StepOutput {
  /** [R, V] row-major: one row per logits row of the batch (`logitsFor`), in sequence order. */
  readonly logits: Float32Array;
  /** layer index -> [T, K'] routed expert ids of every token of the batch, when captured. */
  readonly routedExperts?: Readonly<Record<string, Int32Array>>;
}

/** Device memory of the model by storage dtype (`fp8_e4m3`, `fp8_scale`, `bfloat16`, ...). */
export interface MemoryReport {
  /** This rank's weights (empty when the model runs on other ranks' processes). */
  readonly weightBytes: Readonly<Record<string, number>>;
  /** The KV cache this runner allocated. */
  readonly kvCacheBytes: Readonly<Record<string, number>>;
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
  /**
   * `forward` runs elsewhere (another thread) and waits without blocking this one, so the
   * engine may launch the next step before handing out this one's tokens. Absent: false.
   */
  readonly overlapsHost?: boolean;
  /** Runs one step: writes the new tokens' KV and returns the requested logits rows. */
  forward(batch: ForwardBatch): StepOutput | Promise<StepOutput>;
  /** Releases backend resources; called once by engine shutdown. */
  close?(): void | Promise<void>;
  /** Weight and KV bytes by dtype (the memory plan's inputs; /metrics reports them). */
  readonly memory?: MemoryReport;
}
