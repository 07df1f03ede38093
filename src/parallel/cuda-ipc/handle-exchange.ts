import type { FramedSocket } from '../transport/framed-socket.js';
import { withTimeout } from '../transport/peer-mesh.js';

/** Frame kind of the handle message on the peer mesh (clear of the CPU collectives' 10..16). */
export const IPC_HANDLE_FRAME = 40;

/** What one rank tells every other rank about its registered buffer. */
export interface IpcBufferInfo {
  readonly rank: number;
  readonly worldSize: number;
  /** The sender's process id: a handle opens only in another process. */
  readonly pid: number;
  /** Bytes of each data region (every rank must use the same). */
  readonly cap: number;
  /**
   * Blocks per launch this rank's GPU can keep resident (floor(SMs / ranks on it)); every rank
   * must launch the same grids or the barriers hang, so the group uses the minimum.
   */
  readonly blocks: number;
  /** The 64-byte cudaIpcMemHandle of the buffer. */
  readonly handle: Uint8Array;
}

interface Wire {
  readonly rank: number;
  readonly worldSize: number;
  readonly pid: number;
  readonly cap: number;
  readonly blocks: number;
  readonly handle: string;
}

export function encodeBufferInfo(i: IpcBufferInfo): Uint8Array {
  const w: Wire = { ...i, handle: Buffer.from(i.handle).toString('base64') };
  return Buffer.from(JSON.stringify(w));
}

/** Parses and checks rank `from`'s message against this rank's own. */
export function decodeBufferInfo(
  bytes: Uint8Array,
  from: number,
  own: IpcBufferInfo,
): IpcBufferInfo {
  let w: Wire;
  try {
    w = JSON.parse(Buffer.from(bytes).toString('utf8')) as Wire;
  } catch {
    throw new Error(`IPC handle exchange: rank ${from} sent a message that is not JSON`);
  }
  const handle = new Uint8Array(Buffer.from(String(w.handle ?? ''), 'base64'));
  const bad = (what: string): Error =>
    new Error(`IPC handle exchange: rank ${from} ${what} (this is rank ${own.rank})`);
  if (w.rank !== from) throw bad(`says it is rank ${w.rank}`);
  if (w.worldSize !== own.worldSize)
    throw bad(`expects ${w.worldSize} ranks, this group has ${own.worldSize}`);
  if (w.cap !== own.cap) throw bad(`registered ${w.cap}-byte regions, this rank ${own.cap}`);
  if (!(Number.isInteger(w.blocks) && w.blocks >= 1)) throw bad(`sent ${w.blocks} blocks`);
  if (handle.length !== own.handle.length)
    throw bad(`sent a ${handle.length}-byte handle, expected ${own.handle.length}`);
  if (w.pid === own.pid) throw bad('is in this process (IPC handles open only in another)');
  return { rank: w.rank, worldSize: w.worldSize, pid: w.pid, cap: w.cap, blocks: w.blocks, handle };
}

/** The grid cap every rank of the group launches with: the smallest any rank can keep resident. */
export function agreedBlocks(infos: readonly IpcBufferInfo[]): number {
  return Math.min(...infos.map((i) => i.blocks));
}

/**
 * Sends this rank's buffer info to every peer and returns every rank's (index = rank, this
 * rank's own at its index), each checked; fails naming the rank that sent nothing within
 * `timeoutMs` or whose connection ended.
 */
export async function exchangeBufferInfo(
  own: IpcBufferInfo,
  peers: readonly (FramedSocket | null)[],
  timeoutMs: number,
): Promise<IpcBufferInfo[]> {
  if (peers.length !== own.worldSize)
    throw new Error(`IPC handle exchange: ${peers.length} peer slots for ${own.worldSize} ranks`);
  const msg = encodeBufferInfo(own);
  peers.forEach((p, q) => q !== own.rank && p!.send(IPC_HANDLE_FRAME, 0, msg));
  return Promise.all(
    peers.map(async (p, q) => {
      if (q === own.rank) return own;
      const f = await withTimeout(
        p!.next(),
        timeoutMs,
        () => `IPC handle exchange: rank ${own.rank} got no handle from rank ${q}`,
      );
      if (f.kind !== IPC_HANDLE_FRAME)
        throw new Error(`IPC handle exchange: rank ${q} sent frame kind ${f.kind}, not a handle`);
      return decodeBufferInfo(f.payload, q, own);
    }),
  );
}
