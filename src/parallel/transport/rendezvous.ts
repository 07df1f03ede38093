import { createServer, type Server, type Socket } from 'node:net';
import { FramedSocket } from './framed-socket.js';
import { dial, withTimeout, type PeerAddresses } from './peer-mesh.js';

/**
 * TCP rendezvous, as torchrun does it: rank 0 listens on the master address and port; every
 * other rank connects, says who it is and where its data listener is; once all have joined,
 * rank 0 sends every rank the table of addresses plus an opaque payload (the NCCL unique id).
 * The connection stays open afterwards as the control channel between rank 0 and that rank.
 */
export const CONTROL = { hello: 1, table: 2, step: 3, status: 4 } as const;

export interface RendezvousConfig {
  readonly worldSize: number;
  readonly masterAddr: string;
  readonly masterPort: number;
  /** How long to wait for every rank to join (ms, 0 = forever). */
  readonly timeoutMs: number;
}

export interface RankTable extends PeerAddresses {
  /** Rank 0's bytes for every rank (the 128-byte NCCL unique id, or empty). */
  readonly payload: Uint8Array;
}

interface Hello {
  readonly rank: number;
  readonly worldSize: number;
  readonly dataPort: number;
}

interface TableMessage {
  readonly hosts: string[];
  readonly ports: number[];
  readonly payload: string;
}

/** Rank 0's side: the listener the others join. */
export class RendezvousMaster {
  private readonly joined: FramedSocket[] = [];
  private onJoin: (() => void) | null = null;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly cfg: RendezvousConfig,
  ) {
    server.on('connection', (s: Socket) => {
      this.joined.push(new FramedSocket(s, 'a joining rank'));
      this.onJoin?.();
    });
  }

  /** Listens on the master port (0 picks a free one; read it back from `port`). */
  static listen(cfg: RendezvousConfig, bindHost: string): Promise<RendezvousMaster> {
    return new Promise((resolve, reject) => {
      const server = createServer();
      server.once('error', (e) =>
        reject(
          new Error(`rendezvous: cannot listen on ${bindHost}:${cfg.masterPort}: ${e.message}`),
        ),
      );
      server.listen(cfg.masterPort, bindHost, () => {
        const addr = server.address();
        if (addr === null || typeof addr === 'string') throw new Error('no TCP address');
        resolve(new RendezvousMaster(server, addr.port, cfg));
      });
    });
  }

  /**
   * Waits for ranks 1..W−1, then sends the table. Returns the control channel to each rank
   * (index = rank; null at 0) and the table.
   */
  async gather(
    dataPort: number,
    payload: Uint8Array,
  ): Promise<{ table: RankTable; workers: (FramedSocket | null)[] }> {
    const W = this.cfg.worldSize;
    const workers = new Array<FramedSocket | null>(W).fill(null);
    const hosts = new Array<string>(W).fill(this.cfg.masterAddr);
    const ports = new Array<number>(W).fill(0);
    ports[0] = dataPort;
    const collect = async (): Promise<void> => {
      for (let n = 1; n < W; n++) {
        const f = await this.nextJoin();
        const h = await readHello(f, W);
        if (workers[h.rank]) throw new Error(`rendezvous: rank ${h.rank} joined twice`);
        f.peer = `rank ${h.rank}`;
        workers[h.rank] = f;
        hosts[h.rank] = f.socket.remoteAddress ?? this.cfg.masterAddr;
        ports[h.rank] = h.dataPort;
      }
    };
    await withTimeout(collect(), this.cfg.timeoutMs, () => {
      const gone = workers.map((w, q) => (w || q === 0 ? -1 : q)).filter((q) => q >= 0);
      return `rendezvous: ranks ${gone.join(', ')} did not join ${this.cfg.masterAddr}:${this.port}`;
    });
    this.server.close();
    const msg: TableMessage = { hosts, ports, payload: Buffer.from(payload).toString('base64') };
    for (const w of workers) w?.send(CONTROL.table, 0, Buffer.from(JSON.stringify(msg)));
    return { table: { hosts, ports, payload }, workers };
  }

  close(): void {
    this.server.close();
  }

  private async nextJoin(): Promise<FramedSocket> {
    while (this.joined.length === 0) await new Promise<void>((r) => (this.onJoin = r));
    return this.joined.shift()!;
  }
}

async function readHello(f: FramedSocket, W: number): Promise<Hello> {
  const frame = await f.next();
  const h = JSON.parse(frame.payload.toString('utf8')) as Hello;
  if (frame.kind !== CONTROL.hello) throw new Error('rendezvous: expected a hello frame');
  if (h.worldSize !== W)
    throw new Error(`rendezvous: rank ${h.rank} expects world size ${h.worldSize}, not ${W}`);
  if (!Number.isInteger(h.rank) || h.rank < 1 || h.rank >= W)
    throw new Error(`rendezvous: rank ${h.rank} is outside 1..${W - 1}`);
  return h;
}

/** A rank other than 0: joins, and returns the table and its control channel to rank 0. */
export async function joinRendezvous(
  rank: number,
  cfg: RendezvousConfig,
  dataPort: number,
): Promise<{ table: RankTable; control: FramedSocket }> {
  const s = await dial(cfg.masterAddr, cfg.masterPort, cfg.timeoutMs);
  const control = new FramedSocket(s, 'rank 0');
  const hello: Hello = { rank, worldSize: cfg.worldSize, dataPort };
  control.send(CONTROL.hello, 0, Buffer.from(JSON.stringify(hello)));
  const frame = await withTimeout(
    control.next(),
    cfg.timeoutMs,
    () => `rank ${rank}: the rendezvous at ${cfg.masterAddr}:${cfg.masterPort} did not complete`,
  );
  if (frame.kind !== CONTROL.table) throw new Error('rendezvous: expected the rank table');
  const t = JSON.parse(frame.payload.toString('utf8')) as TableMessage;
  // Rank 0 is reached at the address this rank dialled, which is valid from here.
  const hosts = [...t.hosts];
  hosts[0] = cfg.masterAddr;
  return {
    table: { hosts, ports: t.ports, payload: new Uint8Array(Buffer.from(t.payload, 'base64')) },
    control,
  };
}
