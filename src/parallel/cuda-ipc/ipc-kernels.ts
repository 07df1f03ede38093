import { letter, type CudaTensor } from '../../backend/cuda/cuda-tensor.js';
import type { Dim3 } from '../../backend/cuda/kernel-launch.js';
import { launchKernel } from '../../backend/cuda/kernel-launch.js';
import {
  AR_ADD_RMSNORM_BLOCK,
  AR_ADD_RMSNORM_ROWS,
  AR_ADD_RMSNORM_WARP,
  AR_ONESHOT,
  AR_TWOSHOT,
  IPC_ALL_GATHER,
  IPC_BARRIER,
  IPC_BROADCAST,
  IPC_REDUCE_SCATTER,
} from '../../backend/cuda/kernel-table.js';
import type { OpContext } from '../../backend/cuda/op-context.js';
import { DTYPE_BYTES } from '../../tensor/dtype.js';
import type { AllReduceAlgorithm } from './allreduce-algorithm.js';
import { packWidth } from './allreduce-algorithm.js';
import type { IpcBuffers } from './ipc-buffers.js';

/** What every launch of one rank needs: its stream and kernels, its buffers, the block cap. */
export interface IpcLaunch {
  readonly ctx: Pick<OpContext, 'dev' | 'kernels'>;
  readonly buffers: IpcBuffers;
  /** Same on every rank (checked in the handle exchange): the grids must agree. */
  readonly maxBlocks: number;
}

const THREADS = 512;
const NORM_THREADS = 256; // norm-row.cuh: the unfused add_rmsnorm's block size, for the same bits
const NORM_BLOCK_MIN_N = 512; // below it, one warp per row (as Backend.addRmsNorm picks)

function grid(l: IpcLaunch, units: number, perBlock: number): Dim3 {
  return [Math.min(l.maxBlocks, Math.max(1, Math.ceil(units / perBlock))), 1, 1];
}

function common(l: IpcLaunch) {
  const b = l.buffers;
  return { peers: b.table, rank: b.rank, W: b.worldSize, cap: b.cap };
}

const aligned = (ptr: number): boolean => ptr % 16 === 0;

/** x's elements copied into this rank's `in` region (stream-ordered, capturable). */
export function stageInput(l: IpcLaunch, x: CudaTensor, what: string): void {
  if (x.bytes > l.buffers.cap)
    throw new Error(
      `${what}: ${x.bytes} bytes exceed the IPC buffer's ${l.buffers.cap} (raise maxBytes)`,
    );
  l.ctx.dev.copyAsync(l.buffers.input, x.ptr, x.bytes);
}

/** out [n] ← Σ_q in_q [n] (out may be the staged x itself: the kernel reads `in` only). */
export function launchAllReduce(l: IpcLaunch, algo: AllReduceAlgorithm, out: CudaTensor): void {
  const t = letter(out, 'allReduce');
  const n = out.numel;
  const packs = Math.ceil(n / packWidth(DTYPE_BYTES[out.dtype]));
  const args = { out: out.ptr, ...common(l), n, vec: aligned(out.ptr) ? 1 : 0 };
  const shape = { grid: grid(l, packs, THREADS), block: [THREADS, 1, 1] as const };
  if (algo === 'one-shot') launchKernel(l.ctx, AR_ONESHOT, `ar_oneshot_${t}`, shape, args);
  else launchKernel(l.ctx, AR_TWOSHOT, `ar_twoshot_${t}`, shape, args);
}

/** out [W·n] ← concat over ranks of in_q [n]. */
export function launchAllGather(l: IpcLaunch, out: CudaTensor, n: number): void {
  const t = letter(out, 'allGather');
  const vec = aligned(out.ptr) && (n * DTYPE_BYTES[out.dtype]) % 16 === 0 ? 1 : 0;
  const packs = Math.ceil(n / packWidth(DTYPE_BYTES[out.dtype]));
  launchKernel(
    l.ctx,
    IPC_ALL_GATHER,
    `all_gather_${t}`,
    { grid: grid(l, packs, THREADS), block: [THREADS, 1, 1] },
    { out: out.ptr, ...common(l), n, vec },
  );
}

/** out [n] ← rows [rank·n, (rank+1)·n) of Σ_q in_q [W·n]. */
export function launchReduceScatter(l: IpcLaunch, out: CudaTensor): void {
  const t = letter(out, 'reduceScatter');
  const n = out.numel;
  const vec = aligned(out.ptr) && (n * DTYPE_BYTES[out.dtype]) % 16 === 0 ? 1 : 0;
  const packs = Math.ceil(n / packWidth(DTYPE_BYTES[out.dtype]));
  launchKernel(
    l.ctx,
    IPC_REDUCE_SCATTER,
    `reduce_scatter_${t}`,
    { grid: grid(l, packs, THREADS), block: [THREADS, 1, 1] },
    { out: out.ptr, ...common(l), n, vec },
  );
}

/** out [n] ← in_root [n]. */
export function launchBroadcast(l: IpcLaunch, out: CudaTensor, root: number): void {
  const t = letter(out, 'broadcast');
  const n = out.numel;
  const packs = Math.ceil(n / packWidth(DTYPE_BYTES[out.dtype]));
  launchKernel(
    l.ctx,
    IPC_BROADCAST,
    `broadcast_${t}`,
    { grid: grid(l, packs, THREADS), block: [THREADS, 1, 1] },
    { out: out.ptr, ...common(l), n, vec: aligned(out.ptr) ? 1 : 0, root },
  );
}

/**
 * a [T, D], r [T, D] ← GemmaRMSNorm(r + round_h(Σ_q in_q)) and r + round_h(Σ_q in_q), the
 * partials h [T, D] staged in `in` (their dtype `hDtype` letter `th`).
 */
export function launchAddRmsNorm(
  l: IpcLaunch,
  t: { a: CudaTensor; r: CudaTensor; w: CudaTensor; th: 'b' | 'f' },
  eps: number,
): void {
  const D = t.w.numel;
  const rows = t.r.numel / D;
  const names =
    `${letter(t.r, 'allReduceAddRmsNorm.r')}${t.th}${letter(t.w, 'allReduceAddRmsNorm.w')}` as const;
  const args = { out: t.a.ptr, res: t.r.ptr, w: t.w.ptr, ...common(l), rows, n: D, eps };
  const block = [NORM_THREADS, 1, 1] as const;
  if (D < NORM_BLOCK_MIN_N) {
    const shape = { grid: grid(l, rows, 8), block };
    launchKernel(l.ctx, AR_ADD_RMSNORM_WARP, `ar_add_rmsnorm_warp_${names}`, shape, args);
  } else if (rows <= l.maxBlocks) {
    const shape = { grid: grid(l, rows, 1), block };
    launchKernel(l.ctx, AR_ADD_RMSNORM_BLOCK, `ar_add_rmsnorm_block_${names}`, shape, args);
  } else {
    // More rows than resident blocks: barrier, one block per row on the whole GPU, barrier.
    launchBarrier(l);
    const shape = { grid: [rows, 1, 1] as const, block };
    launchKernel(l.ctx, AR_ADD_RMSNORM_ROWS, `ar_add_rmsnorm_rows_${names}`, shape, args);
    launchBarrier(l);
  }
}

/** Every rank's block 0 meets (the caller then waits for its stream). */
export function launchBarrier(l: IpcLaunch): void {
  launchKernel(
    l.ctx,
    IPC_BARRIER,
    'ipc_barrier',
    { grid: [1, 1, 1], block: [32, 1, 1] },
    common(l),
  );
}
