/**
 * One GEMM + reduce-scatter case for the ranks this process drives (all W as streams, or its
 * own rank as a process): per rank x [M, K] and w [N, K] cut from a seeded pool of random bf16
 * bits, then the communicator's matmulReduceScatter against the same projection as one GEMM of
 * all M rows followed by reduceScatter, bit for bit (its output and the partial outputs, which
 * shows whether the chunk GEMMs kept the full GEMM's bits). Every rank's work is enqueued
 * before any host read (ranks as streams wait on each other's kernels).
 */
import { CudaTensor } from '../../src/backend/cuda/cuda-tensor.js';
import type { CudaDevice } from '../../src/backend/cuda/device.js';
import type { Matmul } from '../../src/parallel/communicator.js';
import type { CudaIpcCommunicator } from '../../src/parallel/cuda-ipc/cuda-ipc-communicator.js';
import { rowView } from '../../src/parallel/cuda-ipc/gemm-reduce-scatter.js';
import { allReduceRows } from '../../src/parallel/reduction-semantics.js';
import { get, getRaw } from './comm-data.js';

export interface GemmRsRank {
  readonly dev: CudaDevice;
  readonly comm: CudaIpcCommunicator;
  readonly matmul: Matmul;
  /** `Backend.matmulRowInvariantFrom` of the backend behind `matmul`. */
  readonly rowInvariantFrom: (w: CudaTensor) => number;
}

export interface GemmRsShape {
  readonly M: number;
  readonly N: number;
  readonly K: number;
}

/** Random bf16 bit patterns, magnitudes 2^-6..2^1, both signs (sums depend on their order). */
export function bf16Pool(n: number, seed: number): Uint16Array {
  let s = (seed * 2654435761 + 7) >>> 0;
  const out = new Uint16Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = ((s >>> 16) & 0x807f) | ((121 + ((s >>> 8) % 8)) << 7);
  }
  return out;
}

function tensor(dev: CudaDevice, shape: number[]): CudaTensor {
  const bytes = shape.reduce((a, b) => a * b, 1) * 2;
  const ptr = dev.malloc(bytes, 'GEMM-RS check tensor');
  dev.memsetAsync(ptr, 0, bytes);
  return new CudaTensor(shape, 'bf16', ptr, null);
}

/** A window of the pool for rank r's tensor `which` (0 = x, 1 = w), `seed` varying replays. */
function fill(
  dev: CudaDevice,
  t: CudaTensor,
  pool: Uint16Array,
  r: number,
  which: number,
  seed: number,
) {
  const n = t.numel;
  const off = ((r * 7 + which * 3 + seed) * 104729) % (pool.length - n + 1);
  dev.upload(t.ptr, pool.subarray(off, off + n));
}

export interface GemmRsResult {
  /** Output elements differing from GEMM then reduce-scatter (all local ranks). */
  readonly outBits: number;
  /** Partial-output elements differing from the one-GEMM partial output. */
  readonly partialBits: number;
  /** Whether every local rank ran the chunked path (not the small-M fallback). */
  readonly chunked: boolean;
  /** Graph replays: output elements differing from the eager reference on new inputs. */
  readonly graphBits?: number;
  /** Output elements differing from the CPU definition (rank-order sums of the partials). */
  readonly cpuBits?: number;
}

/**
 * Runs the case on `ranks` (the local ones, rank order). `pool` must hold at least
 * max(M·K, N·K) elements; with `graph`, the GEMM-RS is also captured per rank and replayed
 * on new inputs; with `cpu` (all ranks local), the output is checked against the CPU
 * definition too.
 */
export function runGemmRsCase(
  ranks: readonly GemmRsRank[],
  s: GemmRsShape,
  pool: Uint16Array,
  o: { graph?: boolean; cpu?: boolean } = {},
): GemmRsResult {
  const { graph = false, cpu = false } = o;
  const W = ranks[0]!.comm.worldSize;
  const n = Math.ceil(s.M / W);
  const t = ranks.map(({ dev, comm }) => {
    const r = comm.rank;
    const x = tensor(dev, [s.M, s.K]);
    const w = tensor(dev, [s.N, s.K]);
    fill(dev, x, pool, r, 0, 0);
    fill(dev, w, pool, r, 1, 0);
    return {
      x,
      w,
      allA: tensor(dev, [W * n, s.N]),
      outA: tensor(dev, [n, s.N]),
      allB: tensor(dev, [W * n, s.N]),
      outB: tensor(dev, [n, s.N]),
    };
  });
  const reference = () =>
    ranks.forEach(({ comm, matmul }, i) => {
      const c = t[i]!;
      matmul(rowView(c.allB, 0, s.M), c.x, c.w);
      comm.reduceScatter(c.outB, c.allB);
    });
  ranks.forEach(({ comm, matmul, rowInvariantFrom }, i) => {
    const c = t[i]!;
    comm.matmulReduceScatter(c.outA, c.allA, c.x, c.w, matmul, rowInvariantFrom(c.w));
  });
  const chunked = ranks.every(({ comm }) => comm.lastGemmRs);
  reference();
  let outBits = 0;
  let partialBits = 0;
  ranks.forEach(({ dev }, i) => {
    const c = t[i]!;
    outBits += differ(dev, c.outA, c.outB);
    partialBits += differ(dev, c.allA, c.allB);
  });
  // The CPU definition of the reduce-scatter on the one-GEMM partials (every rank local).
  let cpuBits: number | undefined;
  if (cpu && ranks.length === W) {
    const sum = allReduceRows(
      ranks.map(({ dev }, i) => get(dev, t[i]!.allB)),
      'bf16',
    );
    cpuBits = 0;
    ranks.forEach(({ dev, comm }, i) => {
      const got = getRaw(dev, t[i]!.outA);
      const want = new Uint32Array(sum.buffer, comm.rank * n * s.N * 4, n * s.N);
      for (let j = 0; j < got.length; j++) if ((got[j]! << 16) >>> 0 !== want[j]) cpuBits!++;
    });
  }
  let graphBits: number | undefined;
  if (graph) {
    const graphs = ranks.map(({ dev, comm, matmul, rowInvariantFrom }, i) => {
      const c = t[i]!;
      const from = rowInvariantFrom(c.w);
      return dev.capture(() => comm.matmulReduceScatter(c.outA, c.allA, c.x, c.w, matmul, from));
    });
    graphBits = 0;
    for (let replay = 1; replay <= 2; replay++) {
      ranks.forEach(({ dev, comm }, i) => {
        fill(dev, t[i]!.x, pool, comm.rank, 0, replay);
        dev.memsetAsync(t[i]!.outA.ptr, 0, t[i]!.outA.bytes);
      });
      graphs.forEach((g) => g.launch());
      reference();
      ranks.forEach(({ dev }, i) => (graphBits! += differ(dev, t[i]!.outA, t[i]!.outB)));
    }
    graphs.forEach((g) => g.destroy());
  }
  ranks.forEach(({ dev }, i) => Object.values(t[i]!).forEach((x) => dev.free(x.ptr, x.bytes)));
  return {
    outBits,
    partialBits,
    chunked,
    ...(graphBits !== undefined && { graphBits }),
    ...(cpuBits !== undefined && { cpuBits }),
  };
}

function differ(dev: CudaDevice, a: CudaTensor, b: CudaTensor): number {
  const x = getRaw(dev, a);
  const y = getRaw(dev, b);
  let d = 0;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) d++;
  return d;
}

/** The o_proj and dense down_proj shapes of MiniMax-M3 (hidden 6144) at W ranks. */
export function projections(W: number, M: number): { name: string; shape: GemmRsShape }[] {
  return [
    { name: 'o_proj', shape: { M, N: 6144, K: 8192 / W } },
    { name: 'down_proj', shape: { M, N: 6144, K: 12288 / W } },
  ];
}
