import { CpuTensor } from '../../backend/cpu/cpu-tensor.js';
import { numel, shapeStr } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import { chunkRange, CommStats, type CollectiveOp } from '../comm-stats.js';
import type { Communicator } from '../communicator.js';
import type { FramedSocket } from '../transport/framed-socket.js';
import { withTimeout } from '../transport/peer-mesh.js';

type HostArray = Float32Array | Int32Array;

/** Frame kind per collective (and per phase of the all-reduce). */
const KIND: Record<CollectiveOp | 'allReduceGather', number> = {
  allReduce: 10,
  allReduceGather: 11,
  allGather: 12,
  reduceScatter: 13,
  allToAll: 14,
  broadcast: 15,
  barrier: 16,
};

export interface CpuCommunicatorOptions {
  /** Keep the ordered log of every collective (tests, byte accounting). */
  readonly recordLog?: boolean;
  /** Fail a collective that waits longer than this for a peer (ms, 0 = never). */
  readonly timeoutMs?: number;
}

/**
 * Collectives between CPU-backend ranks (OS processes, or tasks of one process) over a full
 * TCP mesh. Every reduction is summed in float32 in rank order 0, 1, …, W−1 by the rank that
 * owns the chunk, so every rank gets the same bits on every run. The all-reduce is a direct
 * reduce-scatter then all-gather: each rank sends 2(W−1)/W of the tensor.
 */
export class CpuCommunicator implements Communicator {
  readonly worldSize: number;
  readonly stats: CommStats;
  private seq = 0;
  private readonly timeoutMs: number;

  constructor(
    readonly rank: number,
    /** Connection to each rank, null at this rank's index. */
    private readonly peers: readonly (FramedSocket | null)[],
    o: CpuCommunicatorOptions = {},
  ) {
    this.worldSize = peers.length;
    this.stats = new CommStats(o.recordLog ?? false);
    this.timeoutMs = o.timeoutMs ?? 0;
  }

  async allReduce(x: Tensor): Promise<void> {
    const a = host(x, 'allReduce');
    const { rank: r, worldSize: W } = this;
    const own = chunkRange(a.length, W, r);
    let sent = 0;
    const seq = this.nextSeq();
    for (const q of this.others()) {
      const [s, e] = chunkRange(a.length, W, q);
      sent += this.sendArray(q, KIND.allReduce, seq, a.subarray(s, e));
    }
    const parts = await this.receiveAll(KIND.allReduce, seq);
    const acc = a.slice(own[0], own[1]);
    sumInRankOrder(acc, a.subarray(own[0], own[1]), parts, r);
    a.set(acc, own[0]);
    for (const q of this.others()) sent += this.sendArray(q, KIND.allReduceGather, seq, acc);
    const reduced = await this.receiveAll(KIND.allReduceGather, seq);
    let received = 0;
    [...parts, ...reduced].forEach((buf) => (received += buf?.length ?? 0));
    reduced.forEach((buf, q) => buf && copyInto(a, chunkRange(a.length, W, q)[0], buf));
    this.stats.add({ op: 'allReduce', elems: a.length, bytesSent: sent, bytesReceived: received });
  }

  async allGather(out: Tensor, x: Tensor): Promise<void> {
    const xs = host(x, 'allGather.x');
    const o = host(out, 'allGather.out', this.worldSize * xs.length);
    const seq = this.nextSeq();
    let sent = 0;
    for (const q of this.others()) sent += this.sendArray(q, KIND.allGather, seq, xs);
    o.set(xs, this.rank * xs.length);
    const parts = await this.receiveAll(KIND.allGather, seq);
    parts.forEach((buf, q) => buf && copyInto(o, q * xs.length, buf));
    this.record('allGather', xs.length, sent, parts);
  }

  async reduceScatter(out: Tensor, x: Tensor): Promise<void> {
    const o = host(out, 'reduceScatter.out');
    const xs = host(x, 'reduceScatter.x', this.worldSize * o.length);
    const n = o.length;
    const seq = this.nextSeq();
    let sent = 0;
    for (const q of this.others())
      sent += this.sendArray(q, KIND.reduceScatter, seq, xs.subarray(q * n, (q + 1) * n));
    const parts = await this.receiveAll(KIND.reduceScatter, seq);
    const acc = xs.slice(this.rank * n, (this.rank + 1) * n);
    sumInRankOrder(acc, xs.subarray(this.rank * n, (this.rank + 1) * n), parts, this.rank);
    o.set(acc);
    this.record('reduceScatter', xs.length, sent, parts);
  }

  async allToAll(
    out: Tensor,
    x: Tensor,
    sendRows: readonly number[],
    recvRows: readonly number[],
  ): Promise<void> {
    const rowSize = numel(x.shape.slice(1));
    const xs = host(x, 'allToAll.x', sum(sendRows) * rowSize);
    const o = host(out, 'allToAll.out', sum(recvRows) * rowSize);
    const seq = this.nextSeq();
    const sendAt = offsets(sendRows, rowSize);
    const recvAt = offsets(recvRows, rowSize);
    let sent = 0;
    for (const q of this.others())
      sent += this.sendArray(q, KIND.allToAll, seq, xs.subarray(sendAt[q]!, sendAt[q + 1]!));
    o.set(xs.subarray(sendAt[this.rank]!, sendAt[this.rank + 1]!), recvAt[this.rank]!);
    const parts = await this.receiveAll(KIND.allToAll, seq);
    parts.forEach((buf, q) => {
      if (!buf) return;
      const want = recvAt[q + 1]! - recvAt[q]!;
      if (buf.length !== want * 4)
        throw new Error(`allToAll: rank ${q} sent ${buf.length / 4} elements, expected ${want}`);
      copyInto(o, recvAt[q]!, buf);
    });
    this.record('allToAll', xs.length, sent, parts);
  }

  async broadcast(x: Tensor, root: number): Promise<void> {
    const a = host(x, 'broadcast');
    const seq = this.nextSeq();
    let sent = 0;
    let received = 0;
    if (this.rank === root) {
      for (const q of this.others()) sent += this.sendArray(q, KIND.broadcast, seq, a);
    } else {
      const buf = await this.receive(root, KIND.broadcast, seq);
      copyInto(a, 0, buf);
      received = buf.length;
    }
    this.stats.add({ op: 'broadcast', elems: a.length, bytesSent: sent, bytesReceived: received });
  }

  async barrier(): Promise<void> {
    const seq = this.nextSeq();
    for (const q of this.others()) this.peers[q]!.send(KIND.barrier, seq);
    await this.receiveAll(KIND.barrier, seq);
    this.stats.add({ op: 'barrier', elems: 0, bytesSent: 0, bytesReceived: 0 });
  }

  /** Closes every connection (the peers see this rank leave). */
  close(): void {
    for (const p of this.peers) p?.close();
  }

  private others(): number[] {
    return Array.from({ length: this.worldSize }, (_, q) => q).filter((q) => q !== this.rank);
  }

  private nextSeq(): number {
    return this.seq++;
  }

  private sendArray(q: number, kind: number, seq: number, a: HostArray): number {
    const bytes = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    this.peers[q]!.send(kind, seq, bytes);
    return a.byteLength;
  }

  private async receive(q: number, kind: number, seq: number): Promise<Buffer> {
    const peer = this.peers[q]!;
    const f = await withTimeout(
      peer.next(),
      this.timeoutMs,
      () => `rank ${this.rank}: no data from rank ${q} for collective #${seq}`,
    );
    if (f.kind !== kind || f.seq !== seq >>> 0) {
      throw new Error(
        `collective mismatch: rank ${this.rank} is in ${opName(kind)} #${seq}, rank ${q} sent ${opName(f.kind)} #${f.seq}`,
      );
    }
    return f.payload;
  }

  /** The frame of this collective from every other rank (index = rank; null at own). */
  private receiveAll(kind: number, seq: number): Promise<(Buffer | null)[]> {
    return Promise.all(
      Array.from({ length: this.worldSize }, (_, q) =>
        q === this.rank ? null : this.receive(q, kind, seq),
      ),
    );
  }

  private record(op: CollectiveOp, elems: number, sent: number, parts: (Buffer | null)[]): void {
    const received = parts.reduce((n, b) => n + (b?.length ?? 0), 0);
    this.stats.add({ op, elems, bytesSent: sent, bytesReceived: received });
  }
}

function host(t: Tensor, what: string, expectElems?: number): HostArray {
  if (!(t instanceof CpuTensor))
    throw new Error(`${what}: the CPU communicator moves CPU tensors (got ${t.device})`);
  if (expectElems !== undefined && t.data.length !== expectElems)
    throw new Error(`${what}: ${shapeStr(t.shape)} does not hold ${expectElems} elements`);
  if (t.data instanceof Uint16Array)
    throw new Error(`${what}: a bf16 weight tensor is not an activation to communicate`);
  return t.data;
}

/** acc ← Σ_q part_q in rank order, where part_own is `own` and the others arrive as bytes. */
function sumInRankOrder(
  acc: HostArray,
  own: HostArray,
  parts: (Buffer | null)[],
  rank: number,
): void {
  const view = (q: number): HostArray => {
    if (q === rank) return own;
    const b = parts[q]!;
    const copy =
      own instanceof Float32Array ? new Float32Array(own.length) : new Int32Array(own.length);
    new Uint8Array(copy.buffer).set(b);
    return copy;
  };
  acc.set(view(0));
  for (let q = 1; q < parts.length; q++) {
    const p = view(q);
    for (let i = 0; i < acc.length; i++) acc[i] = acc[i]! + p[i]!;
  }
}

function copyInto(dst: HostArray, elemOffset: number, bytes: Buffer): void {
  new Uint8Array(dst.buffer, dst.byteOffset + elemOffset * 4, bytes.length).set(bytes);
}

function sum(a: readonly number[]): number {
  return a.reduce((s, v) => s + v, 0);
}

/** Element offsets of each rank's block: [0, n0·row, (n0+n1)·row, …]. */
function offsets(rows: readonly number[], rowSize: number): number[] {
  const out = [0];
  for (const n of rows) out.push(out[out.length - 1]! + n * rowSize);
  return out;
}

function opName(kind: number): string {
  return Object.entries(KIND).find(([, k]) => k === kind)?.[0] ?? `frame kind ${kind}`;
}
