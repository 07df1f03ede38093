import type { Backend } from '../../backend/backend.js';
import { DTYPE_BYTES, type DType } from '../../tensor/dtype.js';
import { numel } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import { chunkRange, CommStats } from '../comm-stats.js';
import type { Communicator } from '../communicator.js';
import {
  handleSlot,
  loadNccl,
  NCCL_DTYPE,
  NCCL_SUM,
  NCCL_UNIQUE_ID_BYTES,
  type NcclLib,
} from './nccl-ffi.js';

/** What the communicator needs from the CUDA backend: its stream and a way to wait on it. */
export interface NcclStream {
  /** The CUstream every op of the backend is enqueued on (NCCL runs on it too). */
  readonly stream: unknown;
  synchronize(): void;
  /** A 4-byte device buffer for barriers. */
  scratch(): Tensor;
}

const NCCL_TYPE: Partial<Record<DType, number>> = {
  f32: NCCL_DTYPE.float32,
  bf16: NCCL_DTYPE.bfloat16,
  f16: NCCL_DTYPE.float16,
  i32: NCCL_DTYPE.int32,
  u8: NCCL_DTYPE.uint8,
};

/** Rank 0, before the rendezvous: a fresh ncclUniqueId as its 128 raw bytes. */
export function ncclUniqueId(): Uint8Array {
  const lib = loadNccl();
  const out: { internal?: Uint8Array } = {};
  check(lib, lib.ncclGetUniqueId(out), 'ncclGetUniqueId');
  if (!(out.internal instanceof Uint8Array) || out.internal.length !== NCCL_UNIQUE_ID_BYTES)
    throw new Error('ncclGetUniqueId: the id did not come back as 128 bytes');
  return Uint8Array.from(out.internal);
}

/**
 * Every rank: joins the NCCL communicator of the unique id (ncclCommInitRank runs on a koffi
 * worker thread, so this process stays responsive and can be torn down if another rank
 * dies before joining) on the CUDA backend's device and stream.
 */
export async function createNcclCommunicator(
  rank: number,
  worldSize: number,
  uniqueId: Uint8Array,
  backend: Backend,
): Promise<NcclCommunicator> {
  if (backend.memory !== 'cuda')
    throw new Error('--comm nccl needs the CUDA backend (--backend cuda)');
  const cudaStream = backend.cudaStream;
  if (!cudaStream) throw new Error('NCCL: the CUDA backend exposes no stream');
  let barrierBuf: Tensor | null = null;
  const stream: NcclStream = {
    stream: cudaStream,
    synchronize: () => backend.synchronize(),
    scratch: () => (barrierBuf ??= backend.alloc([1], 'f32')),
  };
  return NcclCommunicator.init(loadNccl(), rank, worldSize, uniqueId, stream);
}

/**
 * Collectives over NCCL, enqueued on the backend's stream (so they order with its kernels and
 * can be captured in CUDA graphs). Sums use NCCL's own (deterministic for a fixed
 * configuration) order, not the CPU communicator's rank order.
 */
export class NcclCommunicator implements Communicator {
  readonly stats = new CommStats(false);
  private failed = false;

  private constructor(
    private readonly lib: NcclLib,
    private readonly comm: unknown,
    readonly rank: number,
    readonly worldSize: number,
    private readonly s: NcclStream,
  ) {}

  static async init(
    lib: NcclLib,
    rank: number,
    worldSize: number,
    uniqueId: Uint8Array,
    s: NcclStream,
  ): Promise<NcclCommunicator> {
    if (uniqueId.length !== NCCL_UNIQUE_ID_BYTES)
      throw new Error(
        `NCCL unique id has ${uniqueId.length} bytes, expected ${NCCL_UNIQUE_ID_BYTES}`,
      );
    const { slot, read } = handleSlot();
    const id = { internal: Uint8Array.from(uniqueId) };
    const res = await new Promise<number>((resolve, reject) =>
      lib.ncclCommInitRank.async(slot, worldSize, id, rank, (err: unknown, r: number) =>
        err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(r),
      ),
    );
    check(lib, res, `ncclCommInitRank(rank ${rank} of ${worldSize})`);
    return new NcclCommunicator(lib, read(), rank, worldSize, s);
  }

  allReduce(x: Tensor): void {
    const n = numel(x.shape);
    this.call(
      'ncclAllReduce',
      this.lib.ncclAllReduce(ptr(x), ptr(x), n, dtype(x), NCCL_SUM, this.comm, this.s.stream),
    );
    const [a, b] = chunkRange(n, this.worldSize, this.rank);
    this.count('allReduce', n, (n - (b - a) + (this.worldSize - 1) * (b - a)) * bytes(x));
  }

  allGather(out: Tensor, x: Tensor): void {
    const n = numel(x.shape);
    this.call(
      'ncclAllGather',
      this.lib.ncclAllGather(ptr(x), ptr(out), n, dtype(x), this.comm, this.s.stream),
    );
    this.count('allGather', n, (this.worldSize - 1) * n * bytes(x));
  }

  reduceScatter(out: Tensor, x: Tensor): void {
    const n = numel(out.shape);
    this.call(
      'ncclReduceScatter',
      this.lib.ncclReduceScatter(ptr(x), ptr(out), n, dtype(x), NCCL_SUM, this.comm, this.s.stream),
    );
    this.count('reduceScatter', numel(x.shape), (this.worldSize - 1) * n * bytes(x));
  }

  /** Grouped ncclSend/ncclRecv to and from every rank (itself included) with its row counts. */
  allToAll(out: Tensor, x: Tensor, sendRows: readonly number[], recvRows: readonly number[]): void {
    const row = numel(x.shape.slice(1));
    const eb = bytes(x);
    const dt = dtype(x);
    let sendAt = 0;
    let recvAt = 0;
    let sent = 0;
    this.call('ncclGroupStart', this.lib.ncclGroupStart());
    try {
      for (let q = 0; q < this.worldSize; q++) {
        const ns = (sendRows[q] ?? 0) * row;
        const nr = (recvRows[q] ?? 0) * row;
        if (ns > 0)
          this.call(
            'ncclSend',
            this.lib.ncclSend(ptr(x) + sendAt * eb, ns, dt, q, this.comm, this.s.stream),
          );
        if (nr > 0)
          this.call(
            'ncclRecv',
            this.lib.ncclRecv(ptr(out) + recvAt * eb, nr, dt, q, this.comm, this.s.stream),
          );
        if (q !== this.rank) sent += ns * eb;
        sendAt += ns;
        recvAt += nr;
      }
    } finally {
      this.call('ncclGroupEnd', this.lib.ncclGroupEnd());
    }
    this.count('allToAll', sendAt, sent);
  }

  broadcast(x: Tensor, root: number): void {
    const n = numel(x.shape);
    this.call(
      'ncclBroadcast',
      this.lib.ncclBroadcast(ptr(x), ptr(x), n, dtype(x), root, this.comm, this.s.stream),
    );
    this.count('broadcast', n, this.rank === root ? (this.worldSize - 1) * n * bytes(x) : 0);
  }

  /** A one-element all-reduce, waited for on the host. */
  barrier(): void {
    const t = this.s.scratch();
    this.call(
      'ncclAllReduce',
      this.lib.ncclAllReduce(ptr(t), ptr(t), 1, dtype(t), NCCL_SUM, this.comm, this.s.stream),
    );
    this.s.synchronize();
    this.count('barrier', 0, 0);
  }

  /** After another rank failed: ncclCommAbort, dropping collectives that can never complete. */
  abort(): void {
    this.failed = true;
    this.close();
  }

  /** Destroys the communicator; after a failure it is aborted instead (pending work dropped). */
  close(): void {
    const res = this.failed
      ? this.lib.ncclCommAbort(this.comm)
      : this.lib.ncclCommDestroy(this.comm);
    check(this.lib, res, this.failed ? 'ncclCommAbort' : 'ncclCommDestroy');
  }

  private call(what: string, res: number): void {
    if (res === 0) return;
    this.failed = true;
    check(this.lib, res, what, this.comm);
  }

  private count(
    op: 'allReduce' | 'allGather' | 'reduceScatter' | 'allToAll' | 'broadcast' | 'barrier',
    elems: number,
    sent: number,
  ): void {
    this.stats.add({ op, elems, bytesSent: sent, bytesReceived: sent });
  }
}

/** Throws with NCCL's own text for a non-zero ncclResult_t (and the comm's last error). */
function check(lib: NcclLib, res: number, what: string, comm?: unknown): void {
  if (res === 0) return;
  const text = (lib.ncclGetErrorString(res) as string | null) ?? `ncclResult ${res}`;
  const last = comm && lib.ncclGetLastError ? (lib.ncclGetLastError(comm) as string | null) : null;
  throw new Error(`${what}: ${text}${last ? ` (${last})` : ''}`);
}

function ptr(t: Tensor): number {
  const s = t.storage;
  if (s.device !== 'cuda') throw new Error(`NCCL: not a device tensor (device ${t.device})`);
  return s.ptr;
}

function dtype(t: Tensor): number {
  const d = NCCL_TYPE[t.dtype];
  if (d === undefined) throw new Error(`NCCL: dtype ${t.dtype} is not supported`);
  return d;
}

function bytes(t: Tensor): number {
  return DTYPE_BYTES[t.dtype];
}
