import { planKvPages } from '../backend/cuda/memory-plan.js';
import type { ForwardBatch } from '../backend/forward-batch.js';
import {
  allocKvCache,
  defaultPageSize,
  kvBytesPerPage,
  type KvCache,
} from '../model/minimax-m3/kv-cache.js';
import type { MiniMaxM3Model } from '../model/minimax-m3/minimax-m3-model.js';
import type { ModelRunner, StepOutput } from './model-runner.js';

export interface M3RunnerOptions {
  /** KV pages to allocate; default from `kvCacheBytes`. */
  readonly numPages?: number;
  /** Memory budget for the KV cache when numPages is not given (default 256 MiB). */
  readonly kvCacheBytes?: number;
  /** Context limit; default the model's max_position_embeddings. */
  readonly maxModelLen?: number;
}

/** Adapts a loaded MiniMax-M3 model (any backend, this rank's share) to the engine. */
export class M3ModelRunner implements ModelRunner {
  readonly vocabSize: number;
  readonly numPages: number;
  readonly pageSize: number;
  readonly maxModelLen: number;
  readonly eosTokenIds: readonly number[];
  private readonly kv: KvCache;

  constructor(
    readonly model: MiniMaxM3Model,
    o: M3RunnerOptions = {},
  ) {
    const cfg = model.cfg;
    const par = { tpRank: model.comm.rank, tpSize: model.comm.worldSize };
    this.pageSize = defaultPageSize(cfg);
    const perPage = kvBytesPerPage(cfg, par, this.pageSize, model.backend.name === 'cpu' ? 4 : 2);
    this.numPages = o.numPages ?? this.defaultPages(perPage, o);
    this.kv = allocKvCache(model.backend, cfg, par, this.numPages, this.pageSize);
    this.vocabSize = cfg.vocabSize;
    // A sequence can never outgrow the page pool, so the context limit the server enforces
    // (and reports in /v1/models) is clamped to it: too-long prompts then get a 400.
    const capacity = this.numPages * this.pageSize;
    this.maxModelLen = Math.min(o.maxModelLen ?? cfg.maxPositionEmbeddings, capacity);
    this.eosTokenIds = cfg.eosTokenIds;
  }

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
}
