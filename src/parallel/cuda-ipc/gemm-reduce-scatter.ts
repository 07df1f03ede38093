import { CudaTensor, cuda, letter } from '../../backend/cuda/cuda-tensor.js';
import { CudaDevice } from '../../backend/cuda/device.js';
import { GEMM_RS_REDUCE } from '../../backend/cuda/kernel-table.js';
import { launchKernel } from '../../backend/cuda/kernel-launch.js';
import { DTYPE_BYTES } from '../../tensor/dtype.js';
import { numel, shapeStr } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { Matmul } from '../communicator.js';
import { packWidth } from './allreduce-algorithm.js';
import { gemmRsChunks } from './gemm-rs-plan.js';
import type { IpcLaunch } from './ipc-kernels.js';
import { IPC_SIGNAL_BYTES } from './ipc-layout.js';

const THREADS = 512;

/**
 * The CUDA side of a GEMM + reduce-scatter (gemm-rs-plan.ts): on this rank's stream, the
 * chunk GEMMs one after another; after each peer block's GEMM an event lets a second stream
 * copy the block (copy engine, no SMs) into slot `rank` of its owner's `tmp` region while the
 * next GEMM runs; the rank's stream then waits for the copies and launches gemm_rs_reduce,
 * whose barrier waits for every peer's pushes and sums the W slots in rank order. Only
 * events and stream waits between the streams: nothing waits on the host, so it can be
 * captured in a CUDA graph (the second stream joins and leaves the capture through them).
 */
export class GemmReduceScatter {
  /** The copy stream (same device and context as the rank's). */
  private readonly side: CudaDevice;
  /** One ordering event per chunk, and the copies-done event. */
  private readonly events: unknown[];

  constructor(private readonly l: IpcLaunch) {
    const dev = l.ctx.dev;
    this.side = new CudaDevice(dev.libs, dev.ordinal);
    this.events = Array.from({ length: l.buffers.worldSize + 1 }, () => dev.createEvent(false));
  }

  /** out [n, N] ← rows [rank·n, …) of Σ_ranks all, all[:M] ← matmul(x, w) (see Communicator). */
  run(out: CudaTensor, all: CudaTensor, x: Tensor, w: Tensor, matmul: Matmul): void {
    const { buffers: b, ctx } = this.l;
    const W = b.worldSize;
    const n = out.shape[0]!;
    const M = x.shape[0]!;
    const rowBytes = (numel(out.shape) / n) * DTYPE_BYTES[out.dtype];
    const blockBytes = n * rowBytes;
    if (all.bytes > b.cap)
      throw new Error(
        `matmulReduceScatter: ${all.bytes} bytes exceed the IPC buffer's ${b.cap} (raise maxBytes)`,
      );
    const xs = cuda(x, 'matmulReduceScatter.x');
    const dev = ctx.dev;
    gemmRsChunks(M, n, W, b.rank).forEach((c, s) => {
      if (c.rows > 0) matmul(rowView(all, c.start, c.rows), rowView(xs, c.start, c.rows), w);
      if (c.dest === b.rank) return; // the own block is read in place by the reduce
      dev.record(this.events[s]);
      this.side.streamWait(this.events[s]);
      const slot = b.bases[c.dest]! + IPC_SIGNAL_BYTES + b.cap + b.rank * blockBytes;
      this.side.copyAsync(slot, all.ptr + c.start * rowBytes, blockBytes);
    });
    this.side.record(this.events[W]);
    dev.streamWait(this.events[W]);
    this.reduce(out, all.ptr + b.rank * blockBytes);
  }

  private reduce(out: CudaTensor, self: number): void {
    const { buffers: b } = this.l;
    const n = out.numel;
    const esize = DTYPE_BYTES[out.dtype];
    const aligned = out.ptr % 16 === 0 && self % 16 === 0 && (n * esize) % 16 === 0;
    const packs = Math.ceil(n / packWidth(esize));
    const blocks = Math.min(this.l.maxBlocks, Math.max(1, Math.ceil(packs / THREADS)));
    launchKernel(
      this.l.ctx,
      GEMM_RS_REDUCE,
      `gemm_rs_reduce_${letter(out, 'matmulReduceScatter')}`,
      { grid: [blocks, 1, 1], block: [THREADS, 1, 1] },
      {
        out: out.ptr,
        self,
        peers: b.table,
        rank: b.rank,
        W: b.worldSize,
        cap: b.cap,
        n,
        vec: aligned ? 1 : 0,
      },
    );
  }
}

/** Rows [start, start + count) of a CUDA tensor, as a view. */
export function rowView(t: CudaTensor, start: number, count: number): CudaTensor {
  const rowElems = numel(t.shape.slice(1));
  if (start < 0 || start + count > t.shape[0]!)
    throw new Error(`rows [${start}, ${start + count}) outside ${shapeStr(t.shape)}`);
  const ptr = t.ptr + start * rowElems * DTYPE_BYTES[t.dtype];
  return new CudaTensor([count, ...t.shape.slice(1)], t.dtype, ptr, null);
}
