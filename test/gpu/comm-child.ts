/**
 * One rank of a process group for the IPC checks and bench:comm (spawned by
 * comm-process-check.ts and comm-bench.ts):
 *   node dist/gpu/test/gpu/comm-child.js '<RankJob JSON>'
 * Rank 0 opens the rendezvous on a free port and prints `PORT <n>`; the parent then starts
 * the others with that port. Each rank creates its CUDA backend on `ordinal`, joins the
 * group, builds the IPC communicator (handles exchanged over the peer mesh, opened with
 * cuIpcOpenMemHandle), runs the job and prints one `RESULT <json>` line.
 */
import { createCudaBackend, type CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import { cuda } from '../../src/backend/cuda/cuda-tensor.js';
import type { Tensor } from '../../src/tensor/tensor.js';
import {
  createCudaIpcCommunicator,
  type CudaIpcCommunicator,
} from '../../src/parallel/cuda-ipc/cuda-ipc-communicator.js';
import {
  closeGroup,
  formGroupAsRank0,
  formGroupAsWorker,
  openMaster,
  type GroupConfig,
  type ProcessGroup,
} from '../../src/parallel/transport/process-group.js';
import { allReduceRows, reduceAddNormRows } from '../../src/parallel/reduction-semantics.js';
import { benchRank, type BenchJob } from '../../bench/comm-bench-rank.js';
import { benchGemmRs, type GemmRsBenchJob } from '../../bench/gemm-rs-bench-rank.js';
import { bitMismatches, deviceTensor, get, hostData, put } from './comm-data.js';
import { bf16Pool, runGemmRsCase, type GemmRsShape } from './gemm-rs-case.js';

export interface RankJob {
  readonly rank: number;
  readonly worldSize: number;
  /** Rank 0: 0 (it picks a port and prints it); the others: that port. */
  readonly port: number;
  readonly ordinal: number;
  readonly ranksPerDevice: number;
  readonly maxBytes: number;
  readonly check?: { readonly tokens: readonly number[]; readonly hidden: number };
  readonly bench?: BenchJob;
  /** The communicator's GEMM + reduce-scatter row threshold (default GEMM_RS_MIN_ROWS). */
  readonly gemmRsMinRows?: number;
  /** GEMM + reduce-scatter cases (gemm-rs-case.ts). */
  readonly gemmRs?: readonly { name: string; shape: GemmRsShape; graph?: boolean }[];
  /** The all-to-all check too (after the GEMM + reduce-scatter cases). */
  readonly allToAll?: boolean;
  /** GEMM + reduce-scatter bench (gemm-rs-bench-rank.ts). */
  readonly gemmRsBench?: GemmRsBenchJob;
}

export interface ChildCheck {
  readonly check: string;
  readonly mismatches: number;
}

async function joinGroup(job: RankJob): Promise<ProcessGroup> {
  const base: GroupConfig = {
    worldSize: job.worldSize,
    masterAddr: '127.0.0.1',
    masterPort: job.port,
    bindHost: '127.0.0.1',
    timeoutMs: 60_000,
  };
  if (job.rank !== 0) return formGroupAsWorker(job.rank, base);
  const master = await openMaster(base);
  console.log(`PORT ${master.port}`);
  return formGroupAsRank0(master, { ...base, masterPort: master.port });
}

/** Every rank generates every rank's inputs (seeded), so it can compute the reference. */
function checkRank(b: CudaBackend, comm: CudaIpcCommunicator, T: number, D: number): ChildCheck[] {
  const { rank: r, worldSize: W } = comm;
  const dev = b.dev;
  const n = T * D;
  const parts = Array.from({ length: W }, (_, q) => hostData(n, 40 + q + T, 'random', 'bf16'));
  const want = allReduceRows(parts, 'bf16');
  const out: ChildCheck[] = [];
  const src = deviceTensor(dev, [T, D], 'bf16');
  const x = deviceTensor(dev, [T, D], 'bf16');
  put(dev, src, parts[r]!);
  for (const algo of ['one-shot', 'two-shot'] as const) {
    dev.copyAsync(x.ptr, src.ptr, src.bytes);
    comm.allReduce(x, algo);
    out.push({ check: `all-reduce ${algo} T=${T}`, mismatches: bitMismatches(get(dev, x), want) });
  }
  const graph = dev.capture(() => {
    dev.copyAsync(x.ptr, src.ptr, src.bytes);
    comm.allReduce(x, 'one-shot');
  });
  let g = 0;
  for (let k = 0; k < 2; k++) {
    dev.memsetAsync(x.ptr, 0, x.bytes);
    graph.launch();
    g += bitMismatches(get(dev, x), want);
  }
  graph.destroy();
  out.push({ check: `graph one-shot T=${T}, 2 replays`, mismatches: g });
  const gathered = deviceTensor(dev, [W * T, D], 'bf16');
  comm.allGather(gathered, src);
  const gw = new Float32Array(W * n);
  parts.forEach((p, q) => gw.set(p, q * n));
  out.push({ check: `all-gather T=${T}/rank`, mismatches: bitMismatches(get(dev, gathered), gw) });
  // reduce-scatter of the gathered tensors' rank-order sums: rows [r·T/W ...) when T % W = 0
  const rsOut = deviceTensor(dev, [T, D], 'bf16');
  const rsIn = deviceTensor(dev, [W * T, D], 'bf16');
  const rsParts = Array.from({ length: W }, (_, q) =>
    hostData(W * n, 70 + q + T, 'random', 'bf16'),
  );
  put(dev, rsIn, rsParts[r]!);
  comm.reduceScatter(rsOut, rsIn);
  const rsWant = allReduceRows(rsParts, 'bf16').subarray(r * n, (r + 1) * n);
  out.push({
    check: `reduce-scatter T=${T}/rank`,
    mismatches: bitMismatches(get(dev, rsOut), rsWant),
  });
  out.push(...checkFusedRank(b, comm, parts, src, T, D));
  return out;
}

function checkFusedRank(
  b: CudaBackend,
  comm: CudaIpcCommunicator,
  parts: Float32Array[],
  h: ReturnType<typeof deviceTensor>,
  T: number,
  D: number,
): ChildCheck[] {
  const dev = b.dev;
  const res = hostData(T * D, 9, 'random', 'bf16');
  const wHost = hostData(D, 8, 'random', 'bf16').map((v) => v / 256);
  const t = Object.fromEntries(
    ['hu', 'rU', 'aU', 'rF', 'aF'].map((k) => [k, deviceTensor(dev, [T, D], 'bf16')]),
  );
  const w = deviceTensor(dev, [D], 'bf16');
  put(dev, w, wHost);
  for (const k of ['rU', 'rF']) put(dev, t[k]!, res);
  dev.copyAsync(t['hu']!.ptr, h.ptr, h.bytes);
  comm.allReduce(t['hu']!);
  b.addRmsNorm(t['aU']!, t['rU']!, t['hu']!, w, 1e-6);
  comm.allReduceAddRmsNorm(t['aF']!, t['rF']!, h, w, 1e-6);
  const cpuR = res.slice();
  reduceAddNormRows({
    partials: parts,
    residual: cpuR,
    out: new Float32Array(T * D),
    weight: wHost,
    eps: 1e-6,
    variant: 'exact',
    activation: 'bf16',
    sumRounding: 'bf16',
  });
  const rF = get(dev, t['rF']!);
  return [
    {
      check: `fused vs unfused a T=${T}`,
      mismatches: bitMismatches(get(dev, t['aF']!), get(dev, t['aU']!)),
    },
    { check: `fused vs unfused r T=${T}`, mismatches: bitMismatches(rF, get(dev, t['rU']!)) },
    { check: `fused r vs CPU definition T=${T}`, mismatches: bitMismatches(rF, cpuR) },
  ];
}

/**
 * The IPC all-to-all against the CPU definition (rows q sends here, in rank order): a seeded
 * row-count matrix with empty pairs (rank 0 sends nothing to the last rank, the last rank
 * receives nothing from rank 1) and a rank sending nothing at all, for bf16 [·, D], f32 and
 * i32 [·, 3] rows (the expert-parallel dispatch's x, weights and ids).
 */
function checkAllToAllRank(b: CudaBackend, comm: CudaIpcCommunicator, D: number): ChildCheck[] {
  const { rank: r, worldSize: W } = comm;
  const S = Array.from({ length: W }, (_, q) =>
    Array.from({ length: W }, (_, p) => {
      if (q === W - 1 && W > 2) return 0; // the last rank sends nothing
      if ((q === 0 && p === W - 1) || (q === 1 && p === W - 1)) return 0;
      return (q * 7 + p * 3 + 1) % 5;
    }),
  );
  const out: ChildCheck[] = [];
  for (const [dtype, width] of [
    ['bf16', D],
    ['f32', 3],
    ['i32', 3],
  ] as const) {
    const rows = (q: number): number => S[q]!.reduce((a, c) => a + c, 0);
    const data = (q: number): Float32Array =>
      hostData(rows(q) * width, 500 + q, 'random', dtype === 'bf16' ? 'bf16' : 'f32');
    const sendRows = S[r]!;
    const recvRows = S.map((row) => row[r]!);
    const x = b.upload(data(r), [rows(r), width], dtype === 'i32' ? 'f32' : dtype);
    const xs =
      dtype === 'i32' ? b.upload(new Int32Array(data(r).buffer), [rows(r), width], 'i32') : x;
    const o = b.alloc([recvRows.reduce((a, c) => a + c, 0), width], dtype);
    comm.allToAll(o, xs, sendRows, recvRows);
    const want: number[] = [];
    for (let q = 0; q < W; q++) {
      const from = S[q]!.slice(0, r).reduce((a, c) => a + c, 0);
      const d = new Uint32Array(data(q).buffer);
      for (let i = from * width; i < (from + S[q]![r]!) * width; i++)
        want.push(dtype === 'bf16' ? d[i]! >>> 16 : d[i]!);
    }
    const got = rawOf(b, o);
    let mism = Math.abs(got.length - want.length);
    for (let i = 0; i < Math.min(got.length, want.length); i++) if (got[i] !== want[i]) mism++;
    out.push({ check: `all-to-all ${dtype} rows of ${width}`, mismatches: mism });
    b.free(o);
    b.free(xs);
  }
  return out;
}

/** A tensor's raw words: bf16 bit patterns, or f32 / i32 bits. */
function rawOf(b: CudaBackend, t: Tensor): Uint16Array | Uint32Array {
  const c = cuda(t, 'all-to-all check');
  const raw = c.dtype === 'bf16' ? new Uint16Array(c.numel) : new Uint32Array(c.numel);
  if (c.numel > 0) b.dev.download(raw, c.ptr);
  return raw;
}

async function main(): Promise<void> {
  // Load every kernel of a module with it: a lazily loaded first launch may wait behind a
  // kernel spinning for another rank (CUDA lazy-loading caveat for interdependent kernels).
  process.env['CUDA_MODULE_LOADING'] ??= 'EAGER';
  const job = JSON.parse(process.argv[2] ?? '{}') as RankJob;
  const backend = await createCudaBackend({ deviceOrdinal: job.ordinal });
  const group = await joinGroup(job);
  const comm = await createCudaIpcCommunicator(group.rank, group.worldSize, group.peers, backend, {
    maxBytes: job.maxBytes,
    ranksPerDevice: job.ranksPerDevice,
    ...(job.gemmRsMinRows !== undefined && { gemmRsMinRows: job.gemmRsMinRows }),
  });
  const rank = {
    dev: backend.dev,
    comm,
    matmul: backend.matmul.bind(backend),
    rowInvariantFrom: (w: Tensor) => backend.matmulRowInvariantFrom(w),
  };
  let result: unknown;
  if (job.check) {
    const checks: ChildCheck[] = [];
    for (const T of job.check.tokens) checks.push(...checkRank(backend, comm, T, job.check.hidden));
    checks.push(...checkAllToAllRank(backend, comm, job.check.hidden));
    result = { rank: job.rank, checks };
  } else if (job.bench) {
    result = { rank: job.rank, bench: benchRank(backend.ctx, [comm], job.bench) };
  } else if (job.gemmRs) {
    const pool = bf16Pool(
      Math.max(...job.gemmRs.map((c) => Math.max(c.shape.N, c.shape.M) * c.shape.K)) + 1024,
      5,
    );
    const checks = job.gemmRs.flatMap((c): ChildCheck[] => {
      const r = runGemmRsCase([rank], c.shape, pool, c);
      return [
        { check: `GEMM-RS ${c.name}: ran chunked (1 = fell back)`, mismatches: r.chunked ? 0 : 1 },
        { check: `GEMM-RS ${c.name}: vs GEMM then reduce-scatter`, mismatches: r.outBits },
        { check: `GEMM-RS ${c.name}: chunk GEMMs vs one GEMM`, mismatches: r.partialBits },
        ...(r.graphBits !== undefined
          ? [{ check: `GEMM-RS ${c.name}: graph, 2 replays`, mismatches: r.graphBits }]
          : []),
      ];
    });
    if (job.allToAll) checks.push(...checkAllToAllRank(backend, comm, 6144));
    result = { rank: job.rank, checks };
  } else if (job.gemmRsBench) {
    result = { rank: job.rank, bench: benchGemmRs([rank], job.gemmRsBench) };
  }
  comm.barrier();
  console.log(`RESULT ${JSON.stringify(result)}`);
  comm.close();
  closeGroup(group);
}

main().catch((e: Error) => {
  console.error(`rank child: ${e.stack ?? e.message}`);
  process.exit(1);
});
