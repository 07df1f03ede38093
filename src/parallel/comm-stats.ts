export type CollectiveOp =
  'allReduce' | 'allGather' | 'reduceScatter' | 'allToAll' | 'broadcast' | 'barrier';

/** One collective as one rank saw it: payload bytes only (no frame headers). */
export interface CollectiveRecord {
  readonly op: CollectiveOp;
  /** Elements of the input tensor `x`. */
  readonly elems: number;
  readonly bytesSent: number;
  readonly bytesReceived: number;
}

/** Running totals per collective kind, plus (when asked for) the ordered log. */
export class CommStats {
  readonly calls: Record<CollectiveOp, number> = zeroes();
  readonly bytesSent: Record<CollectiveOp, number> = zeroes();
  readonly log: CollectiveRecord[] = [];

  constructor(private readonly keepLog: boolean) {}

  add(r: CollectiveRecord): void {
    this.calls[r.op]++;
    this.bytesSent[r.op] += r.bytesSent;
    if (this.keepLog) this.log.push(r);
  }

  get totalBytesSent(): number {
    return Object.values(this.bytesSent).reduce((a, b) => a + b, 0);
  }

  reset(): void {
    for (const k of Object.keys(this.calls) as CollectiveOp[]) {
      this.calls[k] = 0;
      this.bytesSent[k] = 0;
    }
    this.log.length = 0;
  }
}

function zeroes(): Record<CollectiveOp, number> {
  return { allReduce: 0, allGather: 0, reduceScatter: 0, allToAll: 0, broadcast: 0, barrier: 0 };
}

/** [start, end) of chunk `q` when `n` elements are cut into `W` nearly equal chunks. */
export function chunkRange(n: number, W: number, q: number): [number, number] {
  return [Math.floor((q * n) / W), Math.floor(((q + 1) * n) / W)];
}
