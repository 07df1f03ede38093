/**
 * KV-cache sizing from free device memory (pure arithmetic, no CUDA: testable anywhere).
 * After the weights are loaded, the pages are what fits in free memory minus a reserve for
 * activations, workspaces and CUDA graphs; when not even `minPages` fit, the error says by
 * how much the model misses.
 */
export interface KvPlanInput {
  /** Free device bytes after the weights are loaded (CudaBackend.memoryInfo().free). */
  readonly freeBytes: number;
  /** KV bytes of one page over all layers (kvBytesPerPage). */
  readonly bytesPerPage: number;
  /** Bytes kept free for activations, workspaces and graphs (default 4 GiB). */
  readonly reserveBytes?: number;
  /** Fraction of the remaining memory given to the KV cache (default 0.9). */
  readonly fraction?: number;
  /** Fewest pages that make the engine usable (e.g. one max-length sequence). */
  readonly minPages: number;
}

const GiB = 2 ** 30;

export function planKvPages(o: KvPlanInput): number {
  const reserve = o.reserveBytes ?? 4 * GiB;
  const usable = Math.max(0, (o.freeBytes - reserve) * (o.fraction ?? 0.9));
  const pages = Math.floor(usable / o.bytesPerPage);
  if (pages < o.minPages) {
    const need = (o.minPages * o.bytesPerPage) / (o.fraction ?? 0.9) + reserve;
    throw new Error(
      `the model does not fit: ${(o.freeBytes / GiB).toFixed(2)} GiB free after the weights, ` +
        `the KV cache needs at least ${o.minPages} pages of ${(o.bytesPerPage / 2 ** 20).toFixed(2)} MiB ` +
        `plus a ${(reserve / GiB).toFixed(1)} GiB reserve (${(need / GiB).toFixed(2)} GiB); ` +
        'use more GPUs (tensor/expert parallelism), a shorter --max-model-len, or a smaller reserve',
    );
  }
  return pages;
}
