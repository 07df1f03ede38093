/**
 * The CUDA backend's measured kernel choices that benchmarks compare in one process (bench:gpu
 * --moe-lanes, --moe-scan, --fp8-decode). The defaults are the measured best (the notes at
 * each use: moe-expert-gemm.ts, moe-plan.ts, skinny-gemm.ts). A backend holds one
 * (CudaBackendOptions.tuning, OpContext.tuning); a benchmark replaces it between passes with
 * CudaBackend.setTuning, never around a call: graphs captured under one tuning keep its kernels.
 */

/**
 * moe.cu's token plan: the tile table by one thread per expert in turn ('serial') or by warp
 * scans, 32 experts at a step ('warp'), each between a count and a scatter kernel; or ('block')
 * count, table and scatter in one block when the slots are few (decode), else 'warp'.
 */
export type MoeScan = 'serial' | 'warp' | 'block';

/** Block-FP8 decode kernels: 'default' by size, 'v8' (fp8-gemv.cu) wherever it takes the shape. */
export type Fp8DecodeChoice = 'default' | 'v8';

export interface KernelTuning {
  /** cuBLAS lanes (streams) the per-expert GEMM loops spread over. */
  readonly moeLanes: number;
  readonly moeScan: MoeScan;
  readonly fp8Decode: Fp8DecodeChoice;
}

export const DEFAULT_TUNING: KernelTuning = { moeLanes: 4, moeScan: 'block', fp8Decode: 'default' };

/** `t` over the defaults, checked. */
export function kernelTuning(t: Partial<KernelTuning> = {}): KernelTuning {
  const out = { ...DEFAULT_TUNING, ...t };
  if (!Number.isInteger(out.moeLanes) || out.moeLanes < 1)
    throw new Error(`MoE lanes must be a positive integer, not ${out.moeLanes}`);
  return out;
}
