import type { Backend } from '../../backend/backend.js';
import { CudaBackend } from '../../backend/cuda/cuda-backend.js';
import { cuda, CudaTensor } from '../../backend/cuda/cuda-tensor.js';
import type { CudaDevice } from '../../backend/cuda/device.js';
import type { KernelCache } from '../../backend/cuda/kernel-cache.js';
import { DTYPE_BYTES } from '../../tensor/dtype.js';
import { shapeStr } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import { CommStats, type CollectiveOp } from '../comm-stats.js';
import type { Communicator, Matmul } from '../communicator.js';
import type { FramedSocket } from '../transport/framed-socket.js';
import {
  chooseAllReduce,
  ONE_SHOT_MAX_BYTES,
  type AllReduceAlgorithm,
} from './allreduce-algorithm.js';
import { GemmReduceScatter, rowView } from './gemm-reduce-scatter.js';
import { GEMM_RS_MIN_ROWS, smallestGemmRsBlock } from './gemm-rs-plan.js';
import { IpcAllToAll } from './ipc-all-to-all.js';
import { IpcBuffers } from './ipc-buffers.js';
import * as k from './ipc-kernels.js';
import { maxBlocks } from './ipc-layout.js';

export interface CudaIpcOptions {
  /** Bytes of the largest tensor one collective takes as input (the registered regions). */
  readonly maxBytes: number;
  /** Ranks sharing this rank's GPU (1 with one rank per GPU): bounds the blocks per launch. */
  readonly ranksPerDevice: number;
  /** All-reduces up to this many bytes run one-shot (default ONE_SHOT_MAX_BYTES). */
  readonly oneShotMaxBytes?: number;
  /** Projections of at least this many rows run as GEMM + reduce-scatter (default GEMM_RS_MIN_ROWS). */
  readonly gemmRsMinRows?: number;
  /** How long the handle exchange waits for a peer (ms, default 60 s). */
  readonly timeoutMs?: number;
}

/**
 * Collectives between CUDA ranks through registered IPC buffers (kernels/allreduce.cu):
 * every op copies its input into this rank's `in` region and launches one kernel on the
 * rank's stream, nothing waits on the host (so it can be captured in a CUDA graph), and every
 * sum is float32 in rank order 0..W−1 rounded once: the CPU communicator's bits. Ranks may be
 * processes (on one GPU or several) or streams of one process (`createStreamIpcGroup`).
 */
export class CudaIpcCommunicator implements Communicator {
  readonly stats = new CommStats(false);
  /** The algorithm of the latest all-reduce (for checks and benches). */
  lastAlgorithm: AllReduceAlgorithm | null = null;
  /** Whether the latest matmulReduceScatter ran as GEMM + reduce-scatter (checks, benches). */
  lastGemmRs = false;
  readonly oneShotMaxBytes: number;
  readonly gemmRsMinRows: number;
  private gemmRs: GemmReduceScatter | null = null;
  private a2a: IpcAllToAll | null = null;

  constructor(
    private readonly l: k.IpcLaunch,
    o: Pick<CudaIpcOptions, 'oneShotMaxBytes' | 'gemmRsMinRows'> = {},
  ) {
    this.oneShotMaxBytes = o.oneShotMaxBytes ?? ONE_SHOT_MAX_BYTES;
    // From the measured threshold (bench:comm: GEMM-RS wins from M = 1,024). The model's tp2+sp
    // T=1101 mismatch that had it switched off was bf16 near-ties, not this op: on and off gave
    // the same numbers on the GPU (W1), and the group check requires them bit-identical.
    this.gemmRsMinRows = o.gemmRsMinRows ?? GEMM_RS_MIN_ROWS;
  }

  get rank(): number {
    return this.l.buffers.rank;
  }

  get worldSize(): number {
    return this.l.buffers.worldSize;
  }

  /** The stream this rank's collectives are enqueued on. */
  get device(): CudaDevice {
    return this.l.ctx.dev;
  }

  allReduce(x: Tensor, algorithm?: AllReduceAlgorithm): void {
    const t = io(x, 'allReduce');
    const algo = algorithm ?? chooseAllReduce(t.bytes, this.oneShotMaxBytes);
    k.stageInput(this.l, t, 'allReduce');
    k.launchAllReduce(this.l, algo, t);
    this.lastAlgorithm = algo;
    const W = this.worldSize;
    this.count(
      'allReduce',
      t,
      algo === 'one-shot' ? (W - 1) * t.bytes : (2 * (W - 1) * t.bytes) / W,
    );
  }

  allGather(out: Tensor, x: Tensor): void {
    // i32 rows (routed ids) move as 4-byte words: the gather copies bits, no arithmetic.
    const xs = io(asWords(x), 'allGather.x');
    const o = io(asWords(out), 'allGather.out', xs.dtype, this.worldSize * xs.numel);
    k.stageInput(this.l, xs, 'allGather');
    k.launchAllGather(this.l, o, xs.numel);
    this.count('allGather', xs, (this.worldSize - 1) * xs.bytes);
  }

  reduceScatter(out: Tensor, x: Tensor): void {
    const o = io(out, 'reduceScatter.out');
    const xs = io(x, 'reduceScatter.x', o.dtype, this.worldSize * o.numel);
    k.stageInput(this.l, xs, 'reduceScatter');
    k.launchReduceScatter(this.l, o);
    this.count('reduceScatter', xs, (this.worldSize - 1) * o.bytes);
  }

  /**
   * Expert-parallel dispatch and combine (ipc-all-to-all.ts): rows copied out of the peers'
   * registered buffers after the count matrix is read on the host. Every rank must be its own
   * process (the host waits), and the call is not capturable.
   */
  allToAll(out: Tensor, x: Tensor, sendRows: readonly number[], recvRows: readonly number[]): void {
    const xs = cuda(x, 'allToAll.x', ['bf16', 'f32', 'i32']);
    const o = cuda(out, 'allToAll.out', ['bf16', 'f32', 'i32']);
    for (const [t, what] of [
      [xs, 'x'],
      [o, 'out'],
    ] as const)
      if (t.bytes !== t.numel * DTYPE_BYTES[t.dtype])
        throw new Error(`allToAll.${what}: not contiguous`);
    this.a2a ??= new IpcAllToAll(this.l);
    const sent = this.a2a.run(o, xs, sendRows, recvRows);
    this.stats.add({ op: 'allToAll', elems: xs.numel, bytesSent: sent, bytesReceived: sent });
  }

  broadcast(x: Tensor, root: number): void {
    if (!(Number.isInteger(root) && root >= 0 && root < this.worldSize))
      throw new Error(`broadcast: root ${root} is not a rank of ${this.worldSize}`);
    const t = io(x, 'broadcast');
    k.stageInput(this.l, t, 'broadcast');
    k.launchBroadcast(this.l, t, root);
    this.count('broadcast', t, this.rank === root ? (this.worldSize - 1) * t.bytes : 0);
  }

  /** Every rank's stream reaches the barrier kernel; this host waits for its own stream. */
  barrier(): void {
    k.launchBarrier(this.l);
    this.l.ctx.dev.sync();
    this.stats.add({ op: 'barrier', elems: 0, bytesSent: 0, bytesReceived: 0 });
  }

  /**
   * The fused FFN reduction (seed 000): r ← r + round_h(Σ_ranks h), a ← GemmaRMSNorm(r; w),
   * in one kernel, bit for bit what `allReduce(h)` then `Backend.addRmsNorm(a, r, h, w, eps)`
   * give (h itself is left as it was: the fused op never writes the reduced sum).
   */
  allReduceAddRmsNorm(a: Tensor, r: Tensor, h: Tensor, w: Tensor, eps: number): void {
    const hs = io(h, 'allReduceAddRmsNorm.h');
    const rs = io(r, 'allReduceAddRmsNorm.r', undefined, hs.numel);
    const as = io(a, 'allReduceAddRmsNorm.a', rs.dtype, hs.numel);
    const ws = io(w, 'allReduceAddRmsNorm.w');
    if (hs.numel % ws.numel !== 0)
      throw new Error(`allReduceAddRmsNorm: h ${shapeStr(hs.shape)} is not rows of ${ws.numel}`);
    k.stageInput(this.l, hs, 'allReduceAddRmsNorm');
    k.launchAddRmsNorm(this.l, { a: as, r: rs, w: ws, th: hs.dtype === 'bf16' ? 'b' : 'f' }, eps);
    this.count('allReduce', hs, (this.worldSize - 1) * hs.bytes);
  }

  /**
   * Seed 001's GEMM + reduce-scatter (gemm-rs-plan.ts): from `gemmRsMinRows` rows the GEMM
   * runs block by block, each peer block pushed to its owner while the next one is computed;
   * below it, or when a block would have fewer rows than `rowInvariantFrom` (where `matmul`'s
   * row bits depend on the row count), GEMM then reduceScatter. Both give the bits of `matmul`
   * then `reduceScatter`.
   */
  matmulReduceScatter(
    out: Tensor,
    all: Tensor,
    x: Tensor,
    w: Tensor,
    matmul: Matmul,
    rowInvariantFrom = 1,
  ): void {
    const o = io(out, 'matmulReduceScatter.out');
    const a = io(all, 'matmulReduceScatter.all', o.dtype, this.worldSize * o.numel);
    const M = x.shape[0]!;
    if (M > a.shape[0]!)
      throw new Error(`matmulReduceScatter: x ${shapeStr(x.shape)} has more rows than all`);
    this.lastGemmRs =
      a.shape[0]! >= this.gemmRsMinRows &&
      smallestGemmRsBlock(M, o.shape[0]!, this.worldSize) >= rowInvariantFrom;
    if (!this.lastGemmRs) {
      matmul(rowView(a, 0, M), x, w);
      return this.reduceScatter(o, a);
    }
    this.gemmRs ??= new GemmReduceScatter(this.l);
    this.gemmRs.run(o, a, x, w, matmul);
    this.count('reduceScatter', a, (this.worldSize - 1) * o.bytes);
  }

  /** Frees this rank's buffer and unmaps the peers' (after every rank's last collective). */
  close(): void {
    this.a2a?.close();
    this.l.buffers.close();
  }

  private count(op: CollectiveOp, x: CudaTensor, sent: number): void {
    this.stats.add({ op, elems: x.numel, bytesSent: sent, bytesReceived: sent });
  }
}

/** An i32 CUDA tensor seen as f32 words (same storage), any other tensor as it is. */
function asWords(t: Tensor): Tensor {
  if (t.dtype !== 'i32') return t;
  const c = cuda(t, 'i32 tensor');
  return new CudaTensor(c.shape, 'f32', c.ptr, null);
}

/** A bf16 or f32 CUDA tensor (of `dtype` and `numel` when given). */
function io(t: Tensor, what: string, dtype?: string, numel?: number): CudaTensor {
  const c = cuda(t, what, ['bf16', 'f32']);
  if (dtype !== undefined && c.dtype !== dtype)
    throw new Error(`${what}: dtype ${c.dtype}, expected ${dtype}`);
  if (numel !== undefined && c.numel !== numel)
    throw new Error(`${what}: ${shapeStr(c.shape)} does not hold ${numel} elements`);
  if (c.bytes !== c.numel * DTYPE_BYTES[c.dtype]) throw new Error(`${what}: not contiguous`);
  return c;
}

/**
 * This rank of a group of processes (one GPU shared, or several): allocates its buffer,
 * exchanges IPC handles with every peer over the group's data connections, opens theirs.
 */
export async function createCudaIpcCommunicator(
  rank: number,
  worldSize: number,
  peers: readonly (FramedSocket | null)[],
  backend: Backend,
  o: CudaIpcOptions,
): Promise<CudaIpcCommunicator> {
  if (!(backend instanceof CudaBackend))
    throw new Error('--comm ipc needs the CUDA backend (--backend cuda)');
  if (peers.length !== worldSize)
    throw new Error(`IPC communicator: ${peers.length} peers for ${worldSize} ranks`);
  const dev = backend.dev;
  const blocks = maxBlocks(dev.smCount, o.ranksPerDevice);
  const buffers = await IpcBuffers.connect(
    dev,
    rank,
    peers,
    o.maxBytes,
    blocks,
    o.timeoutMs ?? 60_000,
  );
  return new CudaIpcCommunicator({ ctx: backend.ctx, buffers, maxBlocks: buffers.maxBlocks }, o);
}

/**
 * W ranks as W streams of one process on one GPU (each `devs[r]` its own stream in the same
 * context), sharing one kernel cache: the kernels run concurrently, as on W GPUs.
 */
export function createStreamIpcGroup(
  devs: readonly CudaDevice[],
  kernels: KernelCache,
  o: Omit<CudaIpcOptions, 'ranksPerDevice' | 'timeoutMs'>,
): CudaIpcCommunicator[] {
  const blocks = maxBlocks(devs[0]!.smCount, devs.length);
  return IpcBuffers.local(devs, o.maxBytes, blocks).map(
    (buffers, r) =>
      new CudaIpcCommunicator({ ctx: { dev: devs[r]!, kernels }, buffers, maxBlocks: blocks }, o),
  );
}
