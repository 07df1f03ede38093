/**
 * The CUDA IPC collectives with W ranks as W streams of one process on one GPU (their kernels
 * run concurrently, as on W GPUs), against the CPU definition (reduction-semantics.ts) bit for
 * bit: all-reduce one-shot and two-shot, all-gather, reduce-scatter, on random and integer
 * data; the fused all-reduce + add + RMSNorm against the unfused all-reduce then add_rmsnorm
 * kernel bit for bit (and its residual against the CPU definition); graph capture and replay.
 * Run by gpu-check.ts --only comm (the process emulation is comm-process-check.ts).
 */
import { kernelTuning } from '../../src/backend/cuda/kernel-tuning.js';
import { addRmsNorm } from '../../src/backend/cuda/elementwise-ops.js';
import type { CudaTensor } from '../../src/backend/cuda/cuda-tensor.js';
import { CudaDevice } from '../../src/backend/cuda/device.js';
import { loadCudaLibs } from '../../src/backend/cuda/ffi.js';
import { KernelCache } from '../../src/backend/cuda/kernel-cache.js';
import type { OpContext } from '../../src/backend/cuda/op-context.js';
import { Workspace } from '../../src/backend/cuda/workspace.js';
import type { AllReduceAlgorithm } from '../../src/parallel/cuda-ipc/allreduce-algorithm.js';
import {
  createStreamIpcGroup,
  type CudaIpcCommunicator,
} from '../../src/parallel/cuda-ipc/cuda-ipc-communicator.js';
import {
  allReduceRows,
  maxAbsDiff,
  reduceAddNormRows,
} from '../../src/parallel/reduction-semantics.js';
import type { Row } from './check-util.js';
import {
  deviceTensor,
  freeTensor,
  get,
  hostData,
  mismatchesOn,
  put,
  type DataKind,
  type IoDtype,
  rawMismatches,
} from './comm-data.js';

export interface CommCheckOptions {
  readonly ranks: readonly number[];
  readonly tokens: readonly number[];
  readonly hidden: number;
}

const ALGOS: readonly AllReduceAlgorithm[] = ['one-shot', 'two-shot'];
const EPS = 1e-6;

/** W ranks as streams of one process: a device (stream) and op context per rank. */
export interface StreamGroup {
  readonly devs: CudaDevice[];
  readonly ctxs: OpContext[];
  readonly comms: CudaIpcCommunicator[];
  close(): void;
}

export function streamGroup(
  W: number,
  maxBytes: number,
  kernels?: KernelCache,
  o: { gemmRsMinRows?: number } = {},
): StreamGroup {
  const libs = loadCudaLibs();
  const devs = Array.from({ length: W }, () => new CudaDevice(libs, 0));
  const kc = kernels ?? new KernelCache(devs[0]!);
  const ctxs = devs.map((dev) => ({
    dev,
    kernels: kc,
    ws: new Workspace(dev),
    tuning: kernelTuning(),
  }));
  const comms = createStreamIpcGroup(devs, kc, { maxBytes, ...o });
  return { devs, ctxs, comms, close: () => comms.forEach((c) => c.close()) };
}

const row = (check: string, mism: number): Row => ({
  check,
  value: `${mism} bits differ`,
  limit: '0',
  pass: mism === 0,
});

/** Per rank: src (pristine input) and x (the in-place operand). */
function rankTensors(g: StreamGroup, parts: Float32Array[], shape: number[], dt: IoDtype) {
  return g.devs.map((dev, r) => {
    const src = deviceTensor(dev, shape, dt);
    put(dev, src, parts[r]!);
    return { src, x: deviceTensor(dev, shape, dt) };
  });
}

function freeAll(g: StreamGroup, ts: { [k: string]: CudaTensor }[]): void {
  ts.forEach((t, r) => Object.values(t).forEach((x) => freeTensor(g.devs[r]!, x)));
}

/** Every rank's input and their all-reduce by the CPU definition (shared by the checks of a W, T). */
interface Case {
  readonly parts: Float32Array[];
  readonly want: Float32Array;
}

function makeCase(W: number, T: number, D: number, kind: DataKind, dt: IoDtype): Case {
  const parts = Array.from({ length: W }, (_, r) =>
    hostData(T * D, 1000 * W + 10 * r + T, kind, dt),
  );
  return { parts, want: allReduceRows(parts, dt === 'bf16' ? 'bf16' : 'f32') };
}

function checkAllReduce(
  g: StreamGroup,
  T: number,
  D: number,
  kind: DataKind,
  dt: IoDtype,
  c?: Case,
): Row[] {
  const W = g.devs.length;
  const { parts, want } = c ?? makeCase(W, T, D, kind, dt);
  const ts = rankTensors(g, parts, [T, D], dt);
  const rows = ALGOS.map((algo) => {
    ts.forEach(({ src, x }, r) => {
      g.devs[r]!.copyAsync(x.ptr, src.ptr, src.bytes);
      g.comms[r]!.allReduce(x, algo);
    });
    const mism = ts.reduce((m, { x }, r) => m + mismatchesOn(g.devs[r]!, x, want), 0);
    return row(`all-reduce ${algo} W=${W} T=${T} ${dt} ${kind}`, mism);
  });
  freeAll(g, ts);
  return rows;
}

function checkGatherScatter(g: StreamGroup, T: number, D: number, c?: Case): Row[] {
  const W = g.devs.length;
  const per = Math.ceil(T / W); // rows per rank
  const dt = 'bf16';
  // Reuses the all-reduce case of T tokens when W divides T (its parts are [T, D] per rank).
  const whole = c && per * W === T ? c : makeCase(W, per * W, D, 'random', dt);
  const gParts = whole.parts.map((p) => p.subarray(0, per * D));
  const gWant = new Float32Array(W * per * D);
  gParts.forEach((p, r) => gWant.set(p, r * per * D));
  const rsParts = whole.parts;
  const rsAll = whole.want;
  const ag = g.devs.map((dev, r) => {
    const x = deviceTensor(dev, [per, D], dt);
    put(dev, x, gParts[r]!);
    return { x, out: deviceTensor(dev, [W * per, D], dt) };
  });
  const rs = g.devs.map((dev, r) => {
    const x = deviceTensor(dev, [W * per, D], dt);
    put(dev, x, rsParts[r]!);
    return { x, out: deviceTensor(dev, [per, D], dt) };
  });
  ag.forEach(({ x, out }, r) => g.comms[r]!.allGather(out, x));
  rs.forEach(({ x, out }, r) => g.comms[r]!.reduceScatter(out, x));
  const agMism = ag.reduce((m, { out }, r) => m + mismatchesOn(g.devs[r]!, out, gWant), 0);
  const rsMism = rs.reduce((m, { out }, r) => {
    const want = rsAll.subarray(r * per * D, (r + 1) * per * D);
    return m + mismatchesOn(g.devs[r]!, out, want);
  }, 0);
  freeAll(g, ag);
  freeAll(g, rs);
  return [
    row(`all-gather W=${W} ${per} rows/rank × ${D} bf16`, agMism),
    row(`reduce-scatter W=${W} ${per} rows/rank × ${D} bf16`, rsMism),
  ];
}

/** Fused vs unfused on the GPU (bit for bit), and the residual vs the CPU definition. */
function checkFused(g: StreamGroup, T: number, D: number, c?: Case): Row[] {
  const W = g.devs.length;
  const dt = 'bf16';
  const parts = c?.parts ?? makeCase(W, T, D, 'random', dt).parts;
  const res = hostData(T * D, 99, 'random', dt);
  const wHost = hostData(D, 98, 'random', dt).map((v) => v / 256);
  const cpu = { r: res.slice(), a: new Float32Array(T * D) };
  reduceAddNormRows({
    partials: parts,
    residual: cpu.r,
    out: cpu.a,
    weight: wHost,
    eps: EPS,
    variant: 'exact',
    activation: 'bf16',
    sumRounding: 'bf16',
  });
  const ts = g.devs.map((dev, r) => {
    const t = {
      h: deviceTensor(dev, [T, D], dt),
      hu: deviceTensor(dev, [T, D], dt),
      res: deviceTensor(dev, [T, D], dt),
      rU: deviceTensor(dev, [T, D], dt),
      aU: deviceTensor(dev, [T, D], dt),
      rF: deviceTensor(dev, [T, D], dt),
      aF: deviceTensor(dev, [T, D], dt),
      w: deviceTensor(dev, [D], dt),
    };
    put(dev, t.h, parts[r]!);
    put(dev, t.res, res);
    put(dev, t.w, wHost);
    return t;
  });
  // Every rank's collective is enqueued before any rank's next kernel: a first launch may load
  // its module, which must not wait behind a kernel spinning for a rank not yet enqueued.
  ts.forEach((t, r) => {
    g.devs[r]!.copyAsync(t.hu.ptr, t.h.ptr, t.h.bytes);
    g.devs[r]!.copyAsync(t.rU.ptr, t.res.ptr, t.res.bytes);
    g.comms[r]!.allReduce(t.hu);
  });
  ts.forEach((t, r) => addRmsNorm(g.ctxs[r]!, t.aU, t.rU, t.hu, t.w, EPS));
  ts.forEach((t, r) => {
    g.devs[r]!.copyAsync(t.rF.ptr, t.res.ptr, t.res.bytes);
    g.comms[r]!.allReduceAddRmsNorm(t.aF, t.rF, t.h, t.w, EPS);
  });
  let aBits = 0;
  let rBits = 0;
  let rCpu = 0;
  let aCpu = 0;
  // The CPU norm is a tolerance check only (its sum of squares runs in another order): up to
  // 1000 tokens, to keep the host work within the GPU budget.
  const withCpuNorm = T <= 1000;
  ts.forEach((t, r) => {
    const dev = g.devs[r]!;
    aBits += rawMismatches(dev, t.aF, t.aU);
    rBits += rawMismatches(dev, t.rF, t.rU);
    rCpu += mismatchesOn(dev, t.rF, cpu.r);
    if (withCpuNorm) aCpu = Math.max(aCpu, maxAbsDiff(get(dev, t.aF), cpu.a));
  });
  freeAll(g, ts);
  const aMax = cpu.a.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const tag = `W=${W} T=${T} D=${D}`;
  return [
    row(`fused vs unfused: normed a ${tag}`, aBits),
    row(`fused vs unfused: residual ${tag}`, rBits),
    row(`fused residual vs CPU definition ${tag}`, rCpu),
    ...(withCpuNorm
      ? [
          {
            check: `fused normed a vs CPU ${tag} (max |diff|)`,
            value: aCpu.toExponential(2),
            limit: `${(aMax * 2 ** -6).toExponential(2)} (2^-6·max|a|)`,
            pass: aCpu <= aMax * 2 ** -6,
          },
        ]
      : []),
  ];
}

/** One all-reduce per rank captured into a graph per rank, replayed on fresh inputs. */
function checkGraph(g: StreamGroup, T: number, D: number, algo: AllReduceAlgorithm): Row {
  const W = g.devs.length;
  const dt = 'bf16';
  const ts = rankTensors(
    g,
    g.devs.map(() => new Float32Array(T * D)),
    [T, D],
    dt,
  );
  const graphs = ts.map(({ src, x }, r) =>
    g.devs[r]!.capture(() => {
      g.devs[r]!.copyAsync(x.ptr, src.ptr, src.bytes);
      g.comms[r]!.allReduce(x, algo);
    }),
  );
  let mism = 0;
  for (let replay = 0; replay < 3; replay++) {
    const parts = g.devs.map((_, r) => hostData(T * D, 3000 + 100 * replay + r, 'random', dt));
    ts.forEach(({ src }, r) => put(g.devs[r]!, src, parts[r]!));
    graphs.forEach((gr) => gr.launch());
    const want = allReduceRows(parts, 'bf16');
    ts.forEach(({ x }, r) => (mism += mismatchesOn(g.devs[r]!, x, want)));
  }
  graphs.forEach((gr) => gr.destroy());
  freeAll(g, ts);
  return row(`graph: ${algo} all-reduce W=${W} T=${T} captured, 3 replays`, mism);
}

/** Runs every check; `onRows` gets each W's rows as soon as they are done (printing). */
export function checkCommStreams(
  o: CommCheckOptions,
  onRows?: (W: number, rows: Row[]) => void,
): Row[] {
  const rows: Row[] = [];
  const D = o.hidden;
  const maxT = Math.max(...o.tokens);
  let kernels: KernelCache | undefined;
  for (const W of o.ranks) {
    const at = rows.length;
    const g = streamGroup(W, maxT * D * 4, kernels);
    kernels = g.ctxs[0]!.kernels;
    try {
      for (const T of o.tokens) {
        const c = makeCase(W, T, D, 'random', 'bf16');
        rows.push(...checkAllReduce(g, T, D, 'random', 'bf16', c));
        rows.push(...checkFused(g, T, D, c));
        if (T >= 1000) rows.push(...checkGatherScatter(g, T, D, c));
        // Integer data (exact sums: data movement alone) up to 1000 tokens at 8 ranks, to
        // keep the host reference within the GPU budget; every size at 2 and 4.
        if (W < 8 || T <= 1000) rows.push(...checkAllReduce(g, T, D, 'integer', 'bf16'));
      }
      rows.push(...checkAllReduce(g, 7, D, 'random', 'f32'));
      rows.push(...checkAllReduce(g, Math.min(1000, maxT), D, 'integer', 'f32'));
      rows.push(...checkFused(g, 9, 256)); // one warp per row (D < 512)
      rows.push(checkGraph(g, 128, D, 'one-shot'), checkGraph(g, 1000, D, 'two-shot'));
    } finally {
      g.close();
    }
    onRows?.(W, rows.slice(at));
  }
  return rows;
}
