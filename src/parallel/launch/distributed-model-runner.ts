import type { ForwardBatch } from '../../backend/forward-batch.js';
import { defaultPageSize, kvBytesPerPage, type KvCache } from '../../model/minimax-m3/kv-cache.js';
import type { RankGroupDriver } from './rank-group-driver.js';

export interface DistributedRunnerOptions {
  /** KV pages per rank; default from `kvCacheBytes`. */
  readonly numPages?: number;
  /** KV-cache memory budget of each rank when numPages is not given (default 256 MiB). */
  readonly kvCacheBytes?: number;
  /** Context limit; default the model's max_position_embeddings (clamped to the pool). */
  readonly maxModelLen?: number;
}

/**
 * The engine's model runner for a multi-rank group (the engine/model-runner.ts `ModelRunner`
 * contract, met structurally so parallel/ does not import the engine). Every rank allocates
 * the same number of KV pages for its share of the KV heads; each engine step becomes one
 * typed forward message to the other ranks plus rank 0's own forward. `close` (called by the
 * engine's shutdown) ends every rank; `failed` rejects as soon as any rank dies, even idle.
 */
export class DistributedModelRunner {
  readonly vocabSize: number;
  readonly numPages: number;
  readonly pageSize: number;
  readonly maxModelLen: number;
  readonly eosTokenIds: readonly number[];
  private readonly kv: KvCache;

  constructor(
    readonly driver: RankGroupDriver,
    o: DistributedRunnerOptions = {},
  ) {
    const { cfg, layout, backend } = driver.model;
    this.pageSize = defaultPageSize(cfg);
    const perPage = kvBytesPerPage(cfg, layout, this.pageSize, backend.name === 'cpu' ? 4 : 2);
    this.numPages =
      o.numPages ?? Math.max(1, Math.floor((o.kvCacheBytes ?? 256 * 2 ** 20) / perPage));
    this.kv = driver.allocKv(this.numPages, this.pageSize);
    this.vocabSize = cfg.vocabSize;
    this.maxModelLen = Math.min(
      o.maxModelLen ?? cfg.maxPositionEmbeddings,
      this.numPages * this.pageSize,
    );
    this.eosTokenIds = cfg.eosTokenIds;
  }

  get failed(): Promise<never> {
    return this.driver.failed;
  }

  async forward(
    batch: ForwardBatch,
  ): Promise<{ logits: Float32Array; routedExperts?: Readonly<Record<string, Int32Array>> }> {
    const out = await this.driver.forward(batch, this.kv);
    return batch.captureRoutedExperts
      ? { logits: out.logits, routedExperts: out.routedExperts }
      : { logits: out.logits };
  }

  close(): Promise<void> {
    return this.driver.close();
  }

  /** After a failure: kill this host's ranks without the orderly shutdown. */
  abort(): Promise<void> {
    return this.driver.abort();
  }
}
