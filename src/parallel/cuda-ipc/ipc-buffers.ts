import type { CudaDevice } from '../../backend/cuda/device.js';
import {
  ipcCloseMemHandle,
  ipcGetMemHandle,
  ipcOpenMemHandle,
} from '../../backend/cuda/ipc-memory.js';
import type { FramedSocket } from '../transport/framed-socket.js';
import { agreedBlocks, exchangeBufferInfo } from './handle-exchange.js';
import { bufferBytes, checkWorldSize, IPC_SIGNAL_BYTES, regionBytes } from './ipc-layout.js';

/**
 * One registered buffer per rank (ipc-layout.ts) and this rank's view of everyone's: `bases[q]`
 * is rank q's buffer as addressed from this rank's context, and `table` holds the same W
 * addresses in device memory for the kernels. Made either for ranks that are streams of one
 * process (`local`: the pointers are shared as they are, since a process cannot open its own
 * IPC handle) or for ranks in separate processes (`connect`: handles exchanged over the peer
 * mesh and opened). The kernels see no difference.
 */
export class IpcBuffers {
  private closed = false;

  private constructor(
    readonly dev: CudaDevice,
    readonly rank: number,
    /** Bytes of each data region. */
    readonly cap: number,
    /** Every rank's buffer base, index = rank. */
    readonly bases: readonly number[],
    /** Device array [W] of u64: `bases`. */
    readonly table: number,
    /** Peer addresses this rank opened with cuIpcOpenMemHandle (closed by `close`). */
    private readonly opened: readonly number[],
    /** Blocks per launch at most, the same on every rank (handle-exchange.ts agreedBlocks). */
    readonly maxBlocks: number,
  ) {}

  get worldSize(): number {
    return this.bases.length;
  }

  /** This rank's `in` region: a collective's input is copied here first. */
  get input(): number {
    return this.bases[this.rank]! + IPC_SIGNAL_BYTES;
  }

  /** W ranks as W streams of one process (every device shares the primary context). */
  static local(devs: readonly CudaDevice[], maxBytes: number, blocks: number): IpcBuffers[] {
    checkWorldSize(devs.length);
    const cap = regionBytes(maxBytes);
    const bases = devs.map((d) => allocateCleared(d, cap));
    return devs.map((d, r) => new IpcBuffers(d, r, cap, bases, uploadTable(d, bases), [], blocks));
  }

  /**
   * This rank of a group of processes: allocate, exchange handles over `peers`, open the
   * others'. `blocks`: what this rank's GPU keeps resident; the group agrees on the minimum.
   */
  static async connect(
    dev: CudaDevice,
    rank: number,
    peers: readonly (FramedSocket | null)[],
    maxBytes: number,
    blocks: number,
    timeoutMs: number,
  ): Promise<IpcBuffers> {
    checkWorldSize(peers.length);
    const cap = regionBytes(maxBytes);
    const own = allocateCleared(dev, cap);
    const opened: number[] = [];
    try {
      const handle = ipcGetMemHandle(dev, own);
      const infos = await exchangeBufferInfo(
        { rank, worldSize: peers.length, pid: process.pid, cap, blocks, handle },
        peers,
        timeoutMs,
      );
      const bases = infos.map((info, q) => {
        if (q === rank) return own;
        const p = ipcOpenMemHandle(dev, info.handle, `rank ${q}'s buffer on rank ${rank}`);
        opened.push(p);
        return p;
      });
      const table = uploadTable(dev, bases);
      return new IpcBuffers(dev, rank, cap, bases, table, opened, agreedBlocks(infos));
    } catch (e) {
      for (const p of opened) ipcCloseMemHandle(dev, p, 'a peer buffer');
      dev.free(own, bufferBytes(cap));
      throw e;
    }
  }

  /** Unmaps the peers' buffers and frees this rank's (call once every rank has finished). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.dev.sync();
    for (const p of this.opened) ipcCloseMemHandle(this.dev, p, 'a peer buffer');
    this.dev.free(this.bases[this.rank]!, bufferBytes(this.cap));
    this.dev.free(this.table, this.worldSize * 8);
  }
}

/** A fresh buffer with its flags zeroed, the clear finished before any peer can see it. */
function allocateCleared(dev: CudaDevice, cap: number): number {
  const bytes = bufferBytes(cap);
  const p = dev.malloc(bytes, `IPC buffer (${bytes} bytes)`);
  dev.memsetAsync(p, 0, bytes);
  dev.sync();
  return p;
}

function uploadTable(dev: CudaDevice, bases: readonly number[]): number {
  const t = dev.malloc(bases.length * 8, 'IPC peer table');
  dev.upload(t, BigUint64Array.from(bases.map((b) => BigInt(b))));
  return t;
}
