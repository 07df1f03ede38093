import type { KernelTuning } from './kernel-tuning.js';
import type { CudaDevice, KernelFn } from './device.js';
import type { KernelCache } from './kernel-cache.js';
import type { Workspace } from './workspace.js';

/** What an op needs to launch its kernels. */
export interface OpContext {
  readonly dev: CudaDevice;
  readonly kernels: KernelCache;
  readonly ws: Workspace;
  /** The measured kernel choices (kernel-tuning.ts); replaced only between steps. */
  tuning: KernelTuning;
}

/** Blocks for a grid-stride loop over n elements with 256 threads. */
export function strideGrid(ctx: OpContext, n: number): [number, number, number] {
  return [Math.max(1, Math.min(Math.ceil(n / 256), ctx.dev.smCount * 16)), 1, 1];
}

const smemSet = new WeakMap<object, number>();

/** Raises a kernel's dynamic shared-memory limit when a launch needs more than 48 KiB. */
export function ensureSmem(ctx: Pick<OpContext, 'dev'>, fn: KernelFn, bytes: number): void {
  if (bytes <= 48 * 1024) return;
  const key = fn as object;
  if ((smemSet.get(key) ?? 0) >= bytes) return;
  ctx.dev.setMaxDynamicSmem(fn, bytes);
  smemSet.set(key, bytes);
}
