import { connect, createServer, type Server, type Socket } from 'node:net';
import { FramedSocket } from './framed-socket.js';

/** Frame kind of the first frame on a data connection: `{rank}` of the connecting side. */
const PEER_HELLO = 100;

/** Where each rank's data listener is: index = rank. */
export interface PeerAddresses {
  readonly hosts: readonly string[];
  readonly ports: readonly number[];
}

/**
 * The data listener of one rank. It is opened before the rendezvous (its port travels in the
 * rank table) and accepts the connections of the higher ranks once the table is known.
 */
export class PeerListener {
  private readonly accepted: FramedSocket[] = [];
  private onAccept: (() => void) | null = null;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {
    server.on('connection', (s: Socket) => {
      this.accepted.push(new FramedSocket(s, 'a peer rank'));
      this.onAccept?.();
    });
  }

  static listen(host: string): Promise<PeerListener> {
    return new Promise((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, host, () => {
        const addr = server.address();
        if (addr === null || typeof addr === 'string') throw new Error('no TCP address');
        resolve(new PeerListener(server, addr.port));
      });
    });
  }

  /** The next accepted connection, in arrival order. */
  async next(): Promise<FramedSocket> {
    while (this.accepted.length === 0) await new Promise<void>((r) => (this.onAccept = r));
    return this.accepted.shift()!;
  }

  close(): void {
    this.server.close();
  }
}

/**
 * Connects every pair of ranks once: rank r dials every lower rank and accepts every higher
 * one. Returns the connection to each rank (null at this rank's own index).
 */
export async function connectMesh(
  rank: number,
  addrs: PeerAddresses,
  listener: PeerListener,
  timeoutMs: number,
): Promise<(FramedSocket | null)[]> {
  const W = addrs.ports.length;
  const peers: (FramedSocket | null)[] = new Array<FramedSocket | null>(W).fill(null);
  const dials = Array.from({ length: rank }, async (_, q) => {
    const s = await dial(addrs.hosts[q]!, addrs.ports[q]!, timeoutMs);
    const f = new FramedSocket(s, `rank ${q}`);
    f.send(PEER_HELLO, 0, Buffer.from(JSON.stringify({ rank })));
    peers[q] = f;
  });
  const accepts = (async () => {
    for (let n = rank + 1; n < W; n++) {
      const f = await listener.next();
      const hello = await f.next();
      const from = (JSON.parse(hello.payload.toString('utf8')) as { rank: number }).rank;
      if (hello.kind !== PEER_HELLO || !(from > rank && from < W) || peers[from])
        throw new Error(`rank ${rank}: unexpected data connection (rank ${from})`);
      f.peer = `rank ${from}`;
      peers[from] = f;
    }
  })();
  await withTimeout(
    Promise.all([...dials, accepts]),
    timeoutMs,
    () => `rank ${rank}: the data connections to ranks ${missing(peers, rank)} were not made`,
  );
  listener.close();
  return peers;
}

function missing(peers: (FramedSocket | null)[], rank: number): string {
  return peers
    .map((p, q) => (p === null && q !== rank ? q : -1))
    .filter((q) => q >= 0)
    .join(', ');
}

/** Connects to host:port, retrying refused connections until `timeoutMs` has passed. */
export async function dial(host: string, port: number, timeoutMs: number): Promise<Socket> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await new Promise<Socket>((resolve, reject) => {
        const s = connect({ host, port });
        s.once('connect', () => {
          s.removeListener('error', reject);
          resolve(s);
        });
        s.once('error', reject);
      });
    } catch (e) {
      if (Date.now() > deadline)
        throw new Error(`cannot connect to ${host}:${port}: ${(e as Error).message}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** `p`, or an Error with `what()` when it has not settled after `ms` (0 = no limit). */
export function withTimeout<T>(p: Promise<T>, ms: number, what: () => string): Promise<T> {
  if (ms <= 0) return p;
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what()} within ${ms / 1000} s`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}
