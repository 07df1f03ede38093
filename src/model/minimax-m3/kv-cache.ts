import type { Backend } from '../../backend/backend.js';
import type { ModelConfig } from '../../config/model-config.js';
import { kvHeadRange, type ParallelLayout } from '../../parallel/parallel-layout.js';
import type { DType } from '../../tensor/dtype.js';
import type { Tensor } from '../../tensor/tensor.js';

/**
 * One layer's paged caches: K and V [P, S, Hkv_local·Dh]; MSA layers add the index key
 * [P, S, Didx]. With an FP8 cache, K and V hold E4M3 codes meaning code × kScale / vScale
 * (per-tensor, per layer, as vLLM), and the index key codes at scale 1.
 */
export interface LayerKvCache {
  readonly k: Tensor;
  readonly v: Tensor;
  readonly indexK: Tensor | null;
  readonly kScale: number;
  readonly vScale: number;
}

export interface KvCache {
  readonly numPages: number;
  readonly pageSize: number;
  readonly dtype: KvCacheDtype;
  readonly layers: readonly LayerKvCache[];
}

/** vLLM's `--kv-cache-dtype` values: auto is the model dtype (bf16), fp8 is fp8_e4m3. */
export const KV_CACHE_DTYPE_FLAGS = ['auto', 'bf16', 'fp8', 'fp8_e4m3'] as const;
export type KvCacheDtypeFlag = (typeof KV_CACHE_DTYPE_FLAGS)[number];
/** What the KV cache stores: bf16, or E4M3 codes with per-layer K and V scales. */
export type KvCacheDtype = 'bf16' | 'fp8_e4m3';

export function resolveKvCacheDtype(flag: KvCacheDtypeFlag): KvCacheDtype {
  return flag === 'fp8' || flag === 'fp8_e4m3' ? 'fp8_e4m3' : 'bf16';
}

/** The tensor dtype the cache asks for (a float32 backend stores it as f32: Backend.storageDtype). */
export function kvTensorDtype(dtype: KvCacheDtype): DType {
  return dtype === 'fp8_e4m3' ? 'f8e4m3' : 'bf16';
}

/** Per-layer K/V scales of an FP8 cache (checkpoint k_scale / v_scale, else 1.0). */
export interface KvScales {
  readonly k: number;
  readonly v: number;
}

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
  dtype: KvCacheDtype = 'bf16',
  scales: readonly KvScales[] = [],
): KvCache {
  if (cfg.sparse && pageSize !== cfg.sparse.blockSize) {
    throw new Error(
      `KV page size ${pageSize} must equal the MSA block size ${cfg.sparse.blockSize}`,
    );
  }
  const kvWidth = kvHeadRange(cfg, par)[1] * cfg.headDim;
  const t = kvTensorDtype(dtype);
  const layers = Array.from({ length: cfg.numLayers }, (_, i) => ({
    k: backend.alloc([numPages, pageSize, kvWidth], t),
    v: backend.alloc([numPages, pageSize, kvWidth], t),
    indexK:
      cfg.sparseLayers[i] && cfg.sparse
        ? backend.alloc([numPages, pageSize, cfg.sparse.indexDim], t)
        : null,
    kScale: dtype === 'fp8_e4m3' ? (scales[i]?.k ?? 1) : 1,
    vScale: dtype === 'fp8_e4m3' ? (scales[i]?.v ?? 1) : 1,
  }));
  return { numPages, pageSize, dtype, layers };
}

export function freeKvCache(backend: Backend, kv: KvCache): void {
  for (const l of kv.layers) {
    backend.free(l.k);
    backend.free(l.v);
    if (l.indexK) backend.free(l.indexK);
  }
}
