import type { Backend } from '../../backend/backend.js';
import type { ModelConfig } from '../../config/model-config.js';
import { kvHeadRange, type ParallelLayout } from '../../parallel/parallel-layout.js';
import type { DType } from '../../tensor/dtype.js';
import type { Tensor } from '../../tensor/tensor.js';

/** One layer's paged caches: K and V [P, S, Hkv_local·Dh]; MSA layers add the index key [P, S, Didx]. */
export interface LayerKvCache {
  readonly k: Tensor;
  readonly v: Tensor;
  readonly indexK: Tensor | null;
}

export interface KvCache {
  readonly numPages: number;
  readonly pageSize: number;
  readonly layers: readonly LayerKvCache[];
}

/** The dtype the KV cache asks for (a float32 backend stores it as f32: Backend.storageDtype). */
export const KV_DTYPE = 'bf16' satisfies DType;

/** Bytes one page takes on this rank, over all layers (for sizing the pool from free memory). */
export function kvBytesPerPage(
  cfg: ModelConfig,
  par: ParallelLayout,
  pageSize: number,
  bytesPerElem: number,
): number {
  const kvWidth = kvHeadRange(cfg, par)[1] * cfg.headDim;
  let elems = 0;
  for (let i = 0; i < cfg.numLayers; i++)
    elems += 2 * kvWidth + (cfg.sparseLayers[i] && cfg.sparse ? cfg.sparse.indexDim : 0);
  return elems * pageSize * bytesPerElem;
}

/** Page size: the MSA block size when the model has sparse layers (selection works on pages). */
export function defaultPageSize(cfg: ModelConfig): number {
  return cfg.sparse ? cfg.sparse.blockSize : 16;
}

export function allocKvCache(
  backend: Backend,
  cfg: ModelConfig,
  par: ParallelLayout,
  numPages: number,
  pageSize: number,
): KvCache {
  if (cfg.sparse && pageSize !== cfg.sparse.blockSize) {
    throw new Error(
      `KV page size ${pageSize} must equal the MSA block size ${cfg.sparse.blockSize}`,
    );
  }
  const kvWidth = kvHeadRange(cfg, par)[1] * cfg.headDim;
  const layers = Array.from({ length: cfg.numLayers }, (_, i) => ({
    k: backend.alloc([numPages, pageSize, kvWidth], KV_DTYPE),
    v: backend.alloc([numPages, pageSize, kvWidth], KV_DTYPE),
    indexK:
      cfg.sparseLayers[i] && cfg.sparse
        ? backend.alloc([numPages, pageSize, cfg.sparse.indexDim], KV_DTYPE)
        : null,
  }));
  return { numPages, pageSize, layers };
}

export function freeKvCache(backend: Backend, kv: KvCache): void {
  for (const l of kv.layers) {
    backend.free(l.k);
    backend.free(l.v);
    if (l.indexK) backend.free(l.indexK);
  }
}
