import type { Backend } from '../backend/backend.js';
import { planKvPages } from '../backend/cuda/memory-plan.js';
import type { ForwardBatch } from '../backend/forward-batch.js';
import type { ForwardModel } from '../model/forward-model.js';
import {
  defaultPageSize,
  kvBytesPerPage,
  kvTensorDtype,
  type KvCache,
  type KvCacheDtype,
} from '../model/minimax-m3/kv-cache.js';
import type { ParallelLayout } from '../parallel/parallel-layout.js';
import { DTYPE_BYTES } from '../tensor/dtype.js';
import type { MemoryReport, ModelRunner, StepOutput } from './model-runner.js';
import { dtypeName, weightBytesByDtype } from '../model/minimax-m3/weight-bytes.js';
import type { ModelWeights } from '../model/minimax-m3/weights.js';

export interface M3RunnerOptions {
  /** KV pages to allocate (on every rank); default from `kvCacheBytes` or free memory. */
  readonly numPages?: number;
  /** KV-cache memory budget of each rank when numPages is not given (default: from free
   * device memory where the backend reports it, else 256 MiB). */
  readonly kvCacheBytes?: number;
  /** Context limit; default the model's max_position_embeddings. */
  readonly maxModelLen?: number;
}

/**
 * What the runner drives: one rank's MiniMaxM3Model, or rank 0's RankGroupDriver of a --tp
 * group (distributed/rank-group-driver.ts), which forwards every step and KV allocation to
 * the other ranks. `close` ends the group, when there is one.
 */
export interface RunnerModel extends ForwardModel {
  readonly backend: Backend;
  readonly layout: ParallelLayout;
  /** What `allocKv` stores (`--kv-cache-dtype`), for sizing the pool before allocating it. */
  readonly kvCacheDtype: KvCacheDtype;
  close?(): Promise<void>;
}

/**
 * Adapts a loaded MiniMaxM3Model (any backend, one rank or a group led from this rank) to the
 * engine. Every rank allocates the same number of KV pages for its share of the KV heads,
 * sized by one rule (`defaultPages`).
 */
export class M3ModelRunner implements ModelRunner {
  readonly vocabSize: number;
  readonly numPages: number;
  readonly pageSize: number;
  readonly maxModelLen: number;
  readonly eosTokenIds: readonly number[];
  /** The paged KV cache (the CUDA step runner drives the model with it). */
  readonly kv: KvCache;
  readonly memory: MemoryReport;

  constructor(
    readonly model: RunnerModel,
    o: M3RunnerOptions = {},
  ) {
    const cfg = model.cfg;
    this.pageSize = defaultPageSize(cfg);
    const kvDtype = model.backend.storageDtype(kvTensorDtype(model.kvCacheDtype));
    const elemBytes = DTYPE_BYTES[kvDtype];
    const perPage = kvBytesPerPage(cfg, model.layout, this.pageSize, elemBytes);
    this.numPages = o.numPages ?? this.defaultPages(perPage, o);
    this.kv = model.allocKv(this.numPages, this.pageSize);
    this.vocabSize = cfg.vocabSize;
    // A sequence can never outgrow the page pool, so the context limit the server enforces
    // (and reports in /v1/models) is clamped to it: too-long prompts then get a 400.
    const capacity = this.numPages * this.pageSize;
    this.maxModelLen = Math.min(o.maxModelLen ?? cfg.maxPositionEmbeddings, capacity);
    this.eosTokenIds = cfg.eosTokenIds;
    const weights = (model as { weights?: ModelWeights }).weights;
    this.memory = {
      weightBytes: weights ? weightBytesByDtype(weights, model.backend) : {},
      kvCacheBytes: { [dtypeName(kvDtype)]: this.numPages * perPage },
    };
  }

  /**
   * The one KV sizing rule: an explicit byte budget, else what fits in the free device memory
   * (rank 0's, standing for every rank: they hold equal shares), else 256 MiB.
   */
  private defaultPages(perPage: number, o: M3RunnerOptions): number {
    const mem = this.model.backend.memoryInfo?.();
    if (o.kvCacheBytes !== undefined || !mem) {
      return Math.max(1, Math.floor((o.kvCacheBytes ?? 256 * 2 ** 20) / perPage));
    }
    const wanted = Math.min(o.maxModelLen ?? this.model.cfg.maxPositionEmbeddings, 32768);
    return planKvPages({
      freeBytes: mem.free,
      bytesPerPage: perPage,
      minPages: Math.ceil(wanted / this.pageSize),
    });
  }

  async forward(batch: ForwardBatch): Promise<StepOutput> {
    const out = await this.model.forward(batch, this.kv);
    return batch.captureRoutedExperts
      ? { logits: out.logits, routedExperts: out.routedExperts }
      : { logits: out.logits };
  }

  async close(): Promise<void> {
    await this.model.close?.();
  }
}
