import type { FramedSocket } from './framed-socket.js';
import { connectMesh, PeerListener } from './peer-mesh.js';
import {
  joinRendezvous,
  RendezvousMaster,
  type RankTable,
  type RendezvousConfig,
} from './rendezvous.js';

/** Where the ranks of one job meet (torchrun's --nnodes/--node-rank/--master-addr/--master-port). */
export interface GroupConfig extends RendezvousConfig {
  /** Interface the listeners bind to: 127.0.0.1 on one host, 0.0.0.0 across hosts. */
  readonly bindHost: string;
}

/** One rank's connections once the group has formed. */
export interface ProcessGroup {
  readonly rank: number;
  readonly worldSize: number;
  /** Data connection to each rank (null at this rank's index). */
  readonly peers: (FramedSocket | null)[];
  /** Rank 0: control channel to each rank (null at 0). Other ranks: [channel to rank 0]. */
  readonly control: (FramedSocket | null)[];
  readonly table: RankTable;
}

/**
 * Rank 0's half, in two steps: `openMaster` before the other ranks are started (so they can
 * connect; with master port 0 the chosen port is `master.port`), then `formGroupAsRank0`.
 */
export function openMaster(cfg: GroupConfig): Promise<RendezvousMaster> {
  return RendezvousMaster.listen(cfg, cfg.bindHost);
}

export async function formGroupAsRank0(
  master: RendezvousMaster,
  cfg: GroupConfig,
  payload: Uint8Array = new Uint8Array(0),
): Promise<ProcessGroup> {
  const listener = await PeerListener.listen(cfg.bindHost);
  try {
    const { table, workers } = await master.gather(listener.port, payload);
    const peers = await connectMesh(0, table, listener, cfg.timeoutMs);
    return { rank: 0, worldSize: cfg.worldSize, peers, control: workers, table };
  } finally {
    listener.close();
    master.close();
  }
}

export async function formGroupAsWorker(rank: number, cfg: GroupConfig): Promise<ProcessGroup> {
  const listener = await PeerListener.listen(cfg.bindHost);
  try {
    const { table, control } = await joinRendezvous(rank, { ...cfg }, listener.port);
    const peers = await connectMesh(rank, table, listener, cfg.timeoutMs);
    return { rank, worldSize: cfg.worldSize, peers, control: [control], table };
  } finally {
    listener.close();
  }
}

/** Closes every connection of the group. */
export function closeGroup(g: ProcessGroup): void {
  for (const s of [...g.peers, ...g.control]) s?.close();
}
