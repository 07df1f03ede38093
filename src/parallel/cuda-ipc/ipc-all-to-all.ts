import type { CudaTensor } from '../../backend/cuda/cuda-tensor.js';
import { CudaTensor as Tensor } from '../../backend/cuda/cuda-tensor.js';
import { DTYPE_BYTES } from '../../tensor/dtype.js';
import { numel, shapeStr } from '../../tensor/shape.js';
import * as k from './ipc-kernels.js';
import { IPC_SIGNAL_BYTES } from './ipc-layout.js';

/**
 * The personalised all-to-all over IPC buffers, for expert-parallel dispatch and combine:
 *   1. the W×W row-count matrix (every rank's sendRows) by an all-gather, read on the host
 *      (the expert-parallel step reads its routes on the host anyway: not capturable);
 *   2. x staged into this rank's `in` region, a barrier (every rank's input is there);
 *   3. from each peer q, the rows q sends here copied by the copy engine straight out of q's
 *      `in` (its offset there is the count of rows q sends to ranks before this one), into
 *      out in rank order;
 *   4. a barrier, so no rank restages `in` while a peer still copies from it.
 * Rows are copied as bytes: any dtype, the CPU communicator's bits. The host waits for the
 * count matrix, so every rank must be its own process (not the stream emulation).
 */
export class IpcAllToAll {
  /** Device [W] u32: this rank's sendRows, and [W·W]: every rank's (row q = rank q's). */
  private readonly mine: CudaTensor;
  private readonly all: CudaTensor;

  constructor(private readonly l: k.IpcLaunch) {
    const W = l.buffers.worldSize;
    const dev = l.ctx.dev;
    // Counts travel as f32-typed words: the all-gather copies bits, no arithmetic.
    this.mine = new Tensor([W], 'f32', dev.malloc(W * 4, 'all-to-all counts'), null);
    this.all = new Tensor([W * W], 'f32', dev.malloc(W * W * 4, 'all-to-all count matrix'), null);
  }

  run(
    out: CudaTensor,
    x: CudaTensor,
    sendRows: readonly number[],
    recvRows: readonly number[],
  ): number {
    const { buffers: b, ctx } = this.l;
    const W = b.worldSize;
    const r = b.rank;
    if (out.dtype !== x.dtype) throw new Error(`allToAll: out ${out.dtype} but x ${x.dtype}`);
    if (sendRows.length !== W || recvRows.length !== W)
      throw new Error(
        `allToAll: ${sendRows.length} send and ${recvRows.length} receive counts for ${W} ranks`,
      );
    const rowBytes = numel(x.shape.slice(1)) * DTYPE_BYTES[x.dtype];
    const sum = (v: readonly number[]): number => v.reduce((s, c) => s + c, 0);
    if (
      x.shape[0] !== sum(sendRows) ||
      out.shape[0] !== sum(recvRows) ||
      numel(out.shape.slice(1)) !== numel(x.shape.slice(1))
    )
      throw new Error(
        `allToAll: x ${shapeStr(x.shape)} / out ${shapeStr(out.shape)} do not hold ${sum(sendRows)} / ${sum(recvRows)} rows`,
      );
    const S = this.countMatrix(sendRows);
    for (let q = 0; q < W; q++)
      if (S[q * W + r] !== recvRows[q])
        throw new Error(
          `allToAll: rank ${q} sends ${S[q * W + r]} rows here, recvRows says ${recvRows[q]}`,
        );
    if (x.bytes > 0) k.stageInput(this.l, x, 'allToAll');
    k.launchBarrier(this.l);
    let at = 0;
    for (let q = 0; q < W; q++) {
      let from = 0; // rows q sends to ranks before this one
      for (let p = 0; p < r; p++) from += S[q * W + p]!;
      const rows = S[q * W + r]!;
      const src = b.bases[q]! + IPC_SIGNAL_BYTES + from * rowBytes;
      if (rows > 0) ctx.dev.copyAsync(out.ptr + at * rowBytes, src, rows * rowBytes);
      at += rows;
    }
    k.launchBarrier(this.l);
    return (sum(sendRows) - sendRows[r]!) * rowBytes;
  }

  /** S[q·W + p] = rows rank q sends to rank p (an all-gather of every rank's sendRows). */
  private countMatrix(sendRows: readonly number[]): Uint32Array {
    const dev = this.l.ctx.dev;
    dev.upload(this.mine.ptr, Uint32Array.from(sendRows));
    k.stageInput(this.l, this.mine, 'allToAll counts');
    k.launchAllGather(this.l, this.all, sendRows.length);
    const S = new Uint32Array(this.all.numel);
    dev.download(S, this.all.ptr);
    return S;
  }

  close(): void {
    const dev = this.l.ctx.dev;
    dev.free(this.mine.ptr, this.mine.bytes);
    dev.free(this.all.ptr, this.all.bytes);
  }
}
