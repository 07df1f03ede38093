/**
 * The MoE expert-GEMM paths of the CUDA backend (moe-ops.ts: tile kernels, per-expert
 * cuBLAS; the grouped cuBLAS path in checkMoeGrouped) against the CPU backend and against each other, on random bf16 data with the router's
 * own top-k plus a shared expert. Small shapes (D 1024, I 512, 32 + 1 experts) go through the
 * CPU; the real MiniMax-M3 expert shape (D 6144, I 3072, 128 + 1 experts, top-4 + shared) at a
 * 2,048-token prefill is compared GPU path against GPU path.
 */
import type { Backend } from '../../src/backend/backend.js';
import type { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import type { MoeGemmPath } from '../../src/backend/cuda/moe-expert-gemm.js';
import { moe, type Bf16MoeTiles } from '../../src/backend/cuda/moe-ops.js';
import type { Tensor } from '../../src/tensor/tensor.js';
import { randArray, relErr, type Row } from './check-util.js';

const MO = { alpha: 1.702, limit: 7 };
const BF16_LIMIT = 1e-2;
/** Two fp32-accumulated bf16 paths that differ only in K-sum order and one bf16 rounding. */
const PATH_LIMIT = 5e-3;

export interface MoeCase {
  readonly T: number;
  readonly D: number;
  readonly I: number;
  /** Routed experts; one shared expert is added after them. */
  readonly E: number;
  readonly topK: number;
}

/** Inputs of one MoE call on one backend, routes from the CPU router (identical on both). */
export interface MoeInputs {
  readonly x: Tensor;
  readonly ids: Tensor;
  readonly wts: Tensor;
  readonly gateUp: Tensor;
  readonly down: Tensor;
}

/** Routes from the CPU router: top-k of random logits plus the shared expert (id E). */
export function moeRoutes(
  cpu: Backend,
  c: MoeCase,
  seed: number,
): { ids: Int32Array; wts: Float32Array } {
  const logits = cpu.upload(randArray(c.T * c.E, seed, 3, false), [c.T, c.E], 'f32');
  const width = c.topK + 1;
  const ids = cpu.alloc([c.T, width], 'i32');
  const wts = cpu.alloc([c.T, width], 'f32');
  cpu.routerTopK(ids, wts, logits, null, { topK: c.topK, scale: 2, sharedExpertId: c.E });
  const r = { ids: cpu.readI32(ids), wts: cpu.readF32(wts) };
  for (const t of [logits, ids, wts]) cpu.free(t);
  return r;
}

/** x and expert weights from the backends' shared hash fill (bit-equal on CPU and CUDA). */
export function moeInputs(
  b: Backend,
  c: MoeCase,
  routes: { ids: Int32Array; wts: Float32Array },
  seed: number,
): MoeInputs {
  const Et = c.E + 1;
  const width = c.topK + 1;
  const filled = (shape: number[], s: number, scale: number): Tensor => {
    const t = b.alloc(shape, 'bf16');
    b.fillRandom(t, s, scale);
    return t;
  };
  return {
    x: filled([c.T, c.D], seed, 1),
    gateUp: filled([Et, 2 * c.I, c.D], seed + 1, 2 / Math.sqrt(c.D)),
    down: filled([Et, c.D, c.I], seed + 2, 2 / Math.sqrt(c.I)),
    ids: b.upload(routes.ids, [c.T, width], 'i32'),
    wts: b.upload(routes.wts, [c.T, width], 'f32'),
  };
}

export function runGpuMoe(
  gpu: CudaBackend,
  c: MoeCase,
  inp: MoeInputs,
  path: MoeGemmPath,
  tiles?: Bf16MoeTiles,
): Tensor {
  const out = gpu.alloc([c.T, c.D], 'bf16');
  const ew = { gateUp: inp.gateUp, down: inp.down, firstExpert: 0, numLocalExperts: c.E + 1 };
  moe(gpu.ctx, gpu.gemm, out, inp.x, inp.ids, inp.wts, ew, MO, path, undefined, tiles);
  return out;
}

/**
 * bf16 experts on skinny-gemm.cu's tile loop (Bf16MoeTiles 'skinny') against the CPU and
 * against moe.cu's tiles ('mma'), at decode and prefill sizes and the real expert shape.
 */
export function checkMoeSkinnyTiles(cpu: Backend, gpu: CudaBackend): Row[] {
  const rows: Row[] = [];
  for (const c of [
    { T: 5, D: 1024, I: 512, E: 32, topK: 4 },
    { T: 700, D: 1024, I: 512, E: 32, topK: 4 },
    { T: 32, D: 6144, I: 3072, E: 128, topK: 4 },
  ]) {
    const routes = moeRoutes(cpu, c, 40 + c.T);
    const gi = moeInputs(gpu, c, routes, 50);
    const s = runGpuMoe(gpu, c, gi, 'tiles', 'skinny');
    const m = runGpuMoe(gpu, c, gi, 'tiles', 'mma');
    const [sf, mf] = [gpu.readF32(s), gpu.readF32(m)];
    const name = `moe T=${c.T} D=${c.D} I=${c.I} ${c.E}+1 experts top-${c.topK}, bf16 skinny tiles`;
    if (c.D <= 1024) {
      const ci = moeInputs(cpu, c, routes, 50);
      const ref = cpu.alloc([c.T, c.D], 'bf16');
      const ew = { gateUp: ci.gateUp, down: ci.down, firstExpert: 0, numLocalExperts: c.E + 1 };
      cpu.moe(ref, ci.x, ci.ids, ci.wts, ew, MO);
      rows.push(row(`${name} vs CPU`, relErr(sf, cpu.readF32(ref)), BF16_LIMIT));
      freeAll(cpu, [ref, ...Object.values(ci)]);
    }
    rows.push(row(`${name} vs mma tiles`, relErr(sf, mf), PATH_LIMIT));
    freeAll(gpu, [s, m, ...Object.values(gi)]);
  }
  return rows;
}

function row(check: string, err: number, limit: number): Row {
  return { check, value: err.toExponential(2), limit: limit.toExponential(0), pass: err <= limit };
}

function freeAll(b: Backend, ts: readonly Tensor[]): void {
  for (const t of ts) b.free(t);
}

export function checkMoePaths(cpu: Backend, gpu: CudaBackend): Row[] {
  const rows: Row[] = [];
  // T = 5: most experts get no rows (the per-expert loop skips them); T = 700: every expert
  // has rows, the shared one 700.
  for (const c of [
    { T: 5, D: 1024, I: 512, E: 32, topK: 4 },
    { T: 700, D: 1024, I: 512, E: 32, topK: 4 },
  ]) {
    const routes = moeRoutes(cpu, c, 40 + c.T);
    const ci = moeInputs(cpu, c, routes, 50);
    const gi = moeInputs(gpu, c, routes, 50);
    const ref = cpu.alloc([c.T, c.D], 'bf16');
    const ew = { gateUp: ci.gateUp, down: ci.down, firstExpert: 0, numLocalExperts: c.E + 1 };
    cpu.moe(ref, ci.x, ci.ids, ci.wts, ew, MO);
    const want = cpu.readF32(ref);
    const tiles = runGpuMoe(gpu, c, gi, 'tiles');
    const blas = runGpuMoe(gpu, c, gi, 'per-expert-cublas');
    const t = gpu.readF32(tiles);
    const b = gpu.readF32(blas);
    const name = `moe T=${c.T} D=${c.D} I=${c.I} ${c.E}+1 experts top-${c.topK}`;
    rows.push(row(`${name}: per-expert cuBLAS vs CPU`, relErr(b, want), BF16_LIMIT));
    rows.push(row(`${name}: tile kernels vs CPU`, relErr(t, want), BF16_LIMIT));
    rows.push(row(`${name}: cuBLAS vs tile kernels`, relErr(b, t), PATH_LIMIT));
    freeAll(cpu, [ref, ...Object.values(ci)]);
    freeAll(gpu, [tiles, blas, ...Object.values(gi)]);
  }
  const real = { T: 2048, D: 6144, I: 3072, E: 128, topK: 4 };
  const gi = moeInputs(gpu, real, moeRoutes(cpu, real, 77), 60);
  const t = runGpuMoe(gpu, real, gi, 'tiles');
  const b = runGpuMoe(gpu, real, gi, 'per-expert-cublas');
  rows.push(
    row(
      'moe T=2048 real dims (6144/3072, 128+1 top-4): cuBLAS vs tile kernels',
      relErr(gpu.readF32(b), gpu.readF32(t)),
      PATH_LIMIT,
    ),
  );
  freeAll(gpu, [t, b, ...Object.values(gi)]);
  return [...rows, ...checkMoePlanBlock(cpu, gpu)];
}

/**
 * moe_plan_block (the decode plan in one block) against the count / warp-scan / scatter
 * kernels, bit for bit through the tile kernels: 20, 128 and 1,200 slots (the last near the
 * block's limit), and the real expert shape at 32 tokens.
 */
function checkMoePlanBlock(cpu: Backend, gpu: CudaBackend): Row[] {
  const rows: Row[] = [];
  const before = gpu.ctx.tuning;
  try {
    for (const c of [
      { T: 5, D: 1024, I: 512, E: 32, topK: 3 },
      { T: 32, D: 1024, I: 512, E: 32, topK: 3 },
      { T: 300, D: 1024, I: 512, E: 32, topK: 3 },
      { T: 32, D: 6144, I: 3072, E: 128, topK: 4 },
    ]) {
      const gi = moeInputs(gpu, c, moeRoutes(cpu, c, 90 + c.T), 91);
      gpu.setTuning({ ...before, moeScan: 'warp' });
      const w = runGpuMoe(gpu, c, gi, 'tiles');
      gpu.setTuning({ ...before, moeScan: 'block' });
      const k = runGpuMoe(gpu, c, gi, 'tiles');
      const name = `moe T=${c.T} D=${c.D} ${c.E}+1 experts top-${c.topK}: plan in one block vs count/scan/scatter`;
      rows.push(row(`${name} (bit for bit)`, maxAbsDiff(gpu.readF32(k), gpu.readF32(w)), 0));
      freeAll(gpu, [w, k, ...Object.values(gi)]);
    }
  } finally {
    gpu.setTuning(before);
  }
  return rows;
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = a.length === b.length ? 0 : Infinity;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return Number.isNaN(m) ? Infinity : m;
}

/**
 * The grouped cuBLAS path (MOESERVE_MOE_GROUPED=1, opt-in until measured on a GPU) against the
 * CPU (small shapes) and the per-expert loop (the same GEMMs, one cuBLAS call per expert, f32
 * outputs; also at the real expert shape and a 2,048-token prefill).
 */
export function checkMoeGrouped(cpu: Backend, gpu: CudaBackend): Row[] {
  const rows: Row[] = [];
  for (const c of [
    { T: 5, D: 1024, I: 512, E: 32, topK: 4 },
    { T: 700, D: 1024, I: 512, E: 32, topK: 4 },
    { T: 2048, D: 6144, I: 3072, E: 128, topK: 4 },
  ]) {
    const routes = moeRoutes(cpu, c, 40 + c.T);
    const gi = moeInputs(gpu, c, routes, 50);
    const g = runGpuMoe(gpu, c, gi, 'grouped-cublas');
    const b = runGpuMoe(gpu, c, gi, 'per-expert-cublas');
    const [gf, bf] = [gpu.readF32(g), gpu.readF32(b)];
    const name = `moe T=${c.T} D=${c.D} I=${c.I} ${c.E}+1 experts top-${c.topK}`;
    if (c.D <= 1024) {
      const ci = moeInputs(cpu, c, routes, 50);
      const ref = cpu.alloc([c.T, c.D], 'bf16');
      const ew = { gateUp: ci.gateUp, down: ci.down, firstExpert: 0, numLocalExperts: c.E + 1 };
      cpu.moe(ref, ci.x, ci.ids, ci.wts, ew, MO);
      rows.push(row(`${name}: grouped cuBLAS vs CPU`, relErr(gf, cpu.readF32(ref)), BF16_LIMIT));
      freeAll(cpu, [ref, ...Object.values(ci)]);
    }
    // The grouped API writes bf16 (gate|up and the down output rounded once more): bf16's bound.
    rows.push(row(`${name}: grouped vs per-expert cuBLAS`, relErr(gf, bf), BF16_LIMIT));
    freeAll(gpu, [g, b, ...Object.values(gi)]);
  }
  return rows;
}
