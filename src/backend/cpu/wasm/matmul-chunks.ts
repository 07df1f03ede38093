import { panelRows } from '../ops/matmul.js';
import { PackedPanels } from '../packed-panels.js';
import type { JobRows } from './job-rows.js';
import { KERNEL } from './kernel-instances.js';

/** Bytes of packed weights per cache panel (the columns one pass over x's rows reuses). */
const PACKED_PANEL_BYTES = 128 * 1024;

/** One matmul of `CpuKernels.matmuls`: out[M, N] = x[M, K] · w[N, K]^T. */
export interface MatmulJob {
  readonly out: Float32Array;
  readonly x: Float32Array;
  readonly w: Float32Array | Uint16Array | PackedPanels;
  readonly M: number;
  /** Columns of w, where they differ from the call's N (CpuKernels.matmuls). */
  readonly N?: number;
  /** Inputs (x's row width), where they differ from the call's K. */
  readonly K?: number;
}

/**
 * One matmul cut into about `n` chunks, added to `job`: by whole column tiles, or by rows when
 * N is small.
 */
export function matmulChunks(job: JobRows, j: MatmulJob, N: number, K: number, n: number): void {
  const { out, x, w, M } = j;
  const wd = w instanceof PackedPanels ? w.data : w;
  const packed = w instanceof PackedPanels;
  if (packed && N % 8 !== 0) throw new Error(`matmul: packed weights need N % 8 = 0, got ${N}`);
  const bf16 = wd instanceof Uint16Array;
  const fn = packed
    ? bf16
      ? KERNEL.matmul_packed_bf16
      : KERNEL.matmul_packed
    : bf16
      ? KERNEL.matmul_bf16
      : KERNEL.matmul;
  const wb = wd.BYTES_PER_ELEMENT; // weight bytes per element
  const tile = packed ? 8 : 4; // columns of a kernel tile: chunks cut between tiles
  const P = packed ? Math.max(8, Math.floor(PACKED_PANEL_BYTES / (wb * K)) & ~7) : panelRows(K);
  const [o, xp, wp] = [out.byteOffset, x.byteOffset, wd.byteOffset];
  if (n > 1 && N >= 4 * tile * n) {
    const chunk = Math.ceil(N / n / tile) * tile; // column slices of whole tiles
    for (let j0 = 0; j0 < N; j0 += chunk) {
      const c = Math.min(chunk, N - j0);
      job.add(fn, o + 4 * j0, xp, wp + wb * j0 * K, M, c, K, P, N);
    }
  } else {
    const chunk = Math.ceil(M / n);
    for (let i0 = 0; i0 < M; i0 += chunk) {
      const m = Math.min(chunk, M - i0);
      job.add(fn, o + 4 * i0 * N, xp + 4 * i0 * K, wp, m, N, K, P, N);
    }
  }
}
