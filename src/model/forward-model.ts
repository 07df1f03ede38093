import type { ForwardBatch } from '../backend/forward-batch.js';
import type { ModelConfig } from '../config/model-config.js';
import type { KvCache } from './minimax-m3/kv-cache.js';
import type { ForwardOutput } from './minimax-m3/minimax-m3-model.js';

/**
 * What `runForward` and `generateTokens` drive: a model on one rank (MiniMaxM3Model), or
 * rank 0 of a group that forwards each step to the other ranks (engine/distributed/rank-group-driver).
 */
export interface ForwardModel {
  readonly cfg: ModelConfig;
  /** A paged KV cache of `numPages` pages (on every rank of a group). */
  allocKv(numPages: number, pageSize: number): KvCache;
  forward(batch: ForwardBatch, kv: KvCache): Promise<ForwardOutput>;
}
