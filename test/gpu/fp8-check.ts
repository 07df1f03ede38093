/**
 * FP8 weights on the GPU (kernels/skinny-gemm.cu, kernels/fp8-gemm.cu, issue 13) against the
 * CPU backend, which computes on the dequantized values code · scale in float32:
 * - ops: the dense GEMM (decode M ≤ 256: block FP8 on fp8DenseKernel's choice, MXFP8 widened;
 *   and the dequantize + cuBLAS prefill path) and the MoE expert GEMMs (tiles, block FP8 on
 *   each decode kernel; per-expert cuBLAS prefill), for block FP8 and MXFP8 with random codes and
 *   a random scale per row and group; readF32 of a weight is exact;
 * - the device quantizer (`--quantization fp8`) bit for bit against quantizeRows;
 * - real MiniMax-M3 shapes: FP8 kernels (block FP8 on each decode kernel: q8, w8a16, h8) vs
 *   the bf16 kernels on the same (dequantized) weights;
 * - whole models: the tiny-mxfp8 golden with FP8 kept vs dequantized at load (bit for bit: MX
 *   values are exact in bf16) and vs the CPU, and a block-FP8 `init-random --dtype fp8`
 *   checkpoint with dimensions the FP8 kernels take (multiples of 128) vs the CPU.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend, ExpertWeights } from '../../src/backend/backend.js';
import type { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { createCudaBackend, type CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import type { CudaFp8Weight } from '../../src/backend/cuda/cuda-fp8-weight.js';
import { fp8Dequantize } from '../../src/backend/cuda/fp8-ops.js';
import { moe } from '../../src/backend/cuda/moe-ops.js';
import type { CudaTensor } from '../../src/backend/cuda/cuda-tensor.js';
import {
  FP8_DECODE_KERNELS,
  fp8Operand,
  skinnyGemm,
  type Fp8DecodeKernel,
} from '../../src/backend/cuda/skinny-gemm.js';
import type { MoeGemmPath } from '../../src/backend/cuda/moe-expert-gemm.js';
import { loadModel } from '../../src/model/load-model.js';
import { runForward } from '../../src/model/run-forward.js';
import {
  quantizeDequantize,
  quantizeRows,
  f32ToE4m3,
} from '../../src/model/weights/fp8-quantize.js';
import { E8M0_TABLE } from '../../src/model/weights/fp8-dequant.js';
import { writeRandomCheckpoint } from '../../src/model/weights/random-checkpoint.js';
import { PRESETS } from '../../src/model/weights/random-presets.js';
import { F8E4M3_TABLE } from '../../src/tensor/dtype.js';
import { BLOCK_FP8, isFp8Weight, MXFP8, type Fp8Scaling } from '../../src/tensor/fp8-weight.js';
import type { Tensor } from '../../src/tensor/tensor.js';
import { W8A8_MIN_ROWS } from '../../src/tensor/fp8-activation.js';
import { countDiff, groupScaled, randArray, relErr, rng, type Row } from './check-util.js';
import { compareLogits } from './golden-check.js';
import { moeRoutes } from './moe-check.js';

const MO = { alpha: 1.702, limit: 7 };
/** Same weights and bf16 inputs; fp32 sums in another order (f32 out). */
const GEMM_LIMIT = 2e-3;
/** bf16 outputs / activations on the GPU, and the prefill path's one bf16 rounding of weights. */
const BF16_LIMIT = 1e-2;
/** The bound for whole-model logits vs the CPU (bf16 activations on the GPU). */
const LOGIT_LIMIT = 3e-2;

function row(check: string, err: number, limit: number): Row {
  return { check, value: err.toExponential(2), limit: limit.toExponential(0), pass: err <= limit };
}

export interface HostFp8 {
  readonly codes: Uint8Array;
  readonly scales: Float32Array | Uint8Array;
  /** code · scale, what the CPU computes with. */
  readonly values: Float32Array;
}

/** Random codes (no NaN) and a random scale per row and group, about 1/sqrt(K) in size. */
export function randomFp8(shape: number[], s: Fp8Scaling, seed: number): HostFp8 {
  const K = shape[shape.length - 1]!;
  const rows = shape.reduce((a, b) => a * b, 1) / K;
  const g = Math.ceil(K / s.group);
  const r = rng(seed);
  const codes = new Uint8Array(rows * K);
  for (let i = 0; i < codes.length; i++) codes[i] = f32ToE4m3(r(448));
  const scales = s.kind === 'block' ? new Float32Array(rows * g) : new Uint8Array(rows * g);
  const target = 1 / Math.sqrt(K) / 224;
  for (let i = 0; i < scales.length; i++)
    scales[i] =
      s.kind === 'block'
        ? Math.fround(target * (1 + 0.5 * r()))
        : Math.round(Math.log2(target) + 127 + r(1.4));
  const values = new Float32Array(codes.length);
  for (let i = 0; i < codes.length; i++) {
    const sc = scales[Math.floor(i / K) * g + Math.floor((i % K) / s.group)]!;
    values[i] = Math.fround(F8E4M3_TABLE[codes[i]!]! * (s.kind === 'mx' ? E8M0_TABLE[sc]! : sc));
  }
  return { codes, scales, values };
}

export function gpuFp8(gpu: CudaBackend, shape: number[], s: Fp8Scaling, h: HostFp8): Tensor {
  const w = gpu.fp8!.alloc(shape, s);
  gpu.fp8!.write(w, h.codes, h.scales);
  return w;
}

function name(s: Fp8Scaling): string {
  return s.kind === 'block' ? 'block FP8' : 'MXFP8';
}

function denseChecks(cpu: Backend, gpu: CudaBackend): Row[] {
  const rows: Row[] = [];
  const [N, K] = [3072, 1024];
  for (const s of [BLOCK_FP8, MXFP8]) {
    const h = randomFp8([N, K], s, 11);
    const gw = gpuFp8(gpu, [N, K], s, h);
    const cw = cpu.upload(h.values, [N, K], 'bf16');
    cpu.markDequantizedFp8!(cw, s);
    rows.push({
      check: `${name(s)} readF32 = code · scale`,
      value: `${countDiff(gpu.readF32(gw), h.values)} differ`,
      limit: '0',
      pass: countDiff(gpu.readF32(gw), h.values) === 0,
    });
    for (const M of [1, 8, 24, 33, 64, 130, 300]) {
      const x = randArray(M * K, 100 + M);
      const go = gpu.alloc([M, N], 'f32');
      const co = cpu.alloc([M, N], 'f32');
      gpu.matmul(go, gpu.upload(x, [M, K], 'bf16'), gw);
      cpu.matmul(co, cpu.upload(x, [M, K], 'bf16'), cw);
      // Per-row random scales (blocks not sharing one): W8A8 on cuBLASLt's VEC128 weight scales.
      const path =
        M <= 256 ? 'decode kernel' : s.kind === 'block' ? 'W8A8 cuBLASLt' : 'dequantize + cuBLAS';
      const lim = M <= 256 || s.kind === 'mx' ? GEMM_LIMIT : BF16_LIMIT;
      rows.push(
        row(
          `${name(s)} matmul M=${M} N=${N} K=${K} (${path}) vs CPU`,
          relErr(gpu.readF32(go), cpu.readF32(co)),
          lim,
        ),
      );
    }
  }
  return rows;
}

/** The lookup of an FP8 table (--quantization fp8 quantizes the embedding) vs the CPU's. */
function embeddingChecks(cpu: Backend, gpu: CudaBackend): Row[] {
  const rows: Row[] = [];
  const [V, D, T] = [300, 256, 37];
  const tokenIds = Int32Array.from({ length: T }, (_, i) => (i * 97) % V);
  const batch = {
    tokenIds,
    seqs: [{ numCached: 0, numNew: T, pageTable: Int32Array.from([0, 1, 2]) }],
    pageSize: 16,
    logitsFor: 'last' as const,
  };
  for (const s of [BLOCK_FP8, MXFP8]) {
    const h = randomFp8([V, D], s, 17);
    const gw = gpuFp8(gpu, [V, D], s, h);
    const cw = cpu.upload(h.values, [V, D], 'bf16');
    for (const dt of ['f32', 'bf16'] as const) {
      const go = gpu.alloc([T, D], dt);
      const co = cpu.alloc([T, D], dt);
      gpu.embedding(go, gw, gpu.prepareBatch(batch));
      cpu.embedding(co, cw, cpu.prepareBatch(batch));
      const [a, b] = [gpu.readF32(go), cpu.readF32(co)];
      rows.push(
        dt === 'f32'
          ? {
              check: `${name(s)} embedding lookup, f32 out: values differing from the CPU`,
              value: `${countDiff(a, b)}`,
              limit: '0',
              pass: countDiff(a, b) === 0,
            }
          : row(`${name(s)} embedding lookup, bf16 out vs CPU`, relErr(a, b), BF16_LIMIT),
      );
    }
  }
  return rows;
}

function moeChecks(cpu: Backend, gpu: CudaBackend): Row[] {
  const rows: Row[] = [];
  const [D, I, E, topK] = [1024, 512, 16, 4];
  for (const s of [BLOCK_FP8, MXFP8]) {
    const gu = randomFp8([E + 1, 2 * I, D], s, 21);
    const dn = randomFp8([E + 1, D, I], s, 22);
    const gew = {
      gateUp: gpuFp8(gpu, [E + 1, 2 * I, D], s, gu),
      down: gpuFp8(gpu, [E + 1, D, I], s, dn),
      firstExpert: 0,
      numLocalExperts: E + 1,
    };
    const cew = {
      gateUp: cpu.upload(gu.values, [E + 1, 2 * I, D], 'bf16'),
      down: cpu.upload(dn.values, [E + 1, D, I], 'bf16'),
      firstExpert: 0,
      numLocalExperts: E + 1,
    };
    cpu.markDequantizedFp8!(cew.gateUp, s);
    cpu.markDequantizedFp8!(cew.down, s);
    for (const T of [1, 8, 64, 1500]) {
      const routes = moeRoutes(cpu, { T, D, I, E, topK }, 30 + T);
      const x = groupScaled(randArray(T * D, 40 + T), D);
      const run = (b: Backend, ew: typeof cew) => {
        const out = b.alloc([T, D], 'bf16');
        b.moe(
          out,
          b.upload(x, [T, D], 'bf16'),
          b.upload(routes.ids, [T, topK + 1], 'i32'),
          b.upload(routes.wts, [T, topK + 1], 'f32'),
          ew,
          MO,
        );
        return b.readF32(out);
      };
      const ref = run(cpu, cew);
      rows.push(
        row(
          `${name(s)} moe T=${T} D=${D} I=${I} ${E}+1 top-${topK} (${T >= W8A8_MIN_ROWS && s.kind === 'block' ? 'W8A8 per expert' : 'FP8 tiles'}) vs CPU`,
          relErr(run(gpu, gew), ref),
          BF16_LIMIT,
        ),
      );
      // Block FP8 on each tile kernel (the default above is fp8MoeKernel's for T; from 257
      // tokens the op is W8A8, which no tile kernel computes).
      for (const k of s.kind === 'block' && T < W8A8_MIN_ROWS ? FP8_DECODE_KERNELS : []) {
        const out = gpu.alloc([T, D], 'bf16');
        const up = (v: Float32Array | Int32Array, sh: number[], dt: 'bf16' | 'i32' | 'f32') =>
          gpu.upload(v, sh, dt);
        moe(
          gpu.ctx,
          gpu.gemm,
          out,
          up(x, [T, D], 'bf16'),
          up(routes.ids, [T, topK + 1], 'i32'),
          up(routes.wts, [T, topK + 1], 'f32'),
          gew,
          MO,
          undefined,
          k,
        );
        rows.push(
          row(
            `${name(s)} moe T=${T} D=${D} I=${I} ${E}+1 top-${topK} (FP8 tiles, ${k}) vs CPU`,
            relErr(gpu.readF32(out), ref),
            BF16_LIMIT,
          ),
        );
      }
    }
  }
  return rows;
}

/** Device block quantization against quantizeRows, codes and scales bit for bit. */
function quantizeChecks(gpu: CudaBackend): Row[] {
  const rows: Row[] = [];
  for (const shape of [
    [300, 520],
    [3, 256, 384],
  ]) {
    const [R, C] = shape.slice(-2) as [number, number];
    const host = randArray(
      shape.reduce((a, b) => a * b, 1),
      7,
      0.1,
    );
    const t = gpu.upload(host, shape, 'bf16');
    const q = gpu.fp8!.quantize(t) as CudaFp8Weight;
    const codes = new Uint8Array(q.numel);
    gpu.dev.download(codes, q.ptr);
    const scales = new Float32Array(q.scales.numel);
    gpu.dev.download(scales, q.scales.ptr);
    let codeDiff = 0;
    let scaleDiff = 0;
    const Kg = Math.ceil(C / 128);
    for (let m = 0; m < host.length / (R * C); m++) {
      const ref = quantizeRows(host.subarray(m * R * C, (m + 1) * R * C), R, C, 'fp8', [128, 128]);
      codeDiff += countDiff(codes.subarray(m * R * C, (m + 1) * R * C), ref.codes);
      for (let r = 0; r < R; r++)
        for (let g = 0; g < Kg; g++)
          if (scales[(m * R + r) * Kg + g] !== ref.scales[Math.floor(r / 128) * Kg + g])
            scaleDiff++;
    }
    const deq = countDiff(gpu.readF32(q), quantizeDequantize(host, R, C));
    const ok = codeDiff === 0 && scaleDiff === 0 && deq === 0;
    rows.push({
      check: `quantize [${shape.join(', ')}] vs quantizeRows: codes / scales / dequantized differing`,
      value: `${codeDiff} / ${scaleDiff} / ${deq}`,
      limit: '0',
      pass: ok,
    });
  }
  return rows;
}

/** Real shapes: FP8 kernels vs bf16 kernels on the FP8 weights' values rounded to bf16. */
function realShapeChecks(gpu: CudaBackend, cpu: Backend): Row[] {
  const rows: Row[] = [];
  const bf16Of = (w: CudaFp8Weight): Tensor => {
    const t = gpu.alloc(w.shape, 'bf16');
    fp8Dequantize(gpu.ctx, (t as CudaFp8Weight).ptr, 'b', w);
    return t;
  };
  const filled = (shape: number[], scale: number): Tensor => {
    const t = gpu.alloc(shape, 'bf16');
    gpu.fillRandom(t, 5, scale);
    return t;
  };
  const [N, K] = [6144, 8192];
  const w = gpu.fp8!.quantize(filled([N, K], 1 / Math.sqrt(K))) as CudaFp8Weight;
  const wb = bf16Of(w);
  for (const M of [1, 32]) {
    const x = gpu.upload(randArray(M * K, 9), [M, K], 'bf16');
    const a = gpu.alloc([M, N], 'f32');
    const b = gpu.alloc([M, N], 'f32');
    gpu.matmul(b, x, wb);
    const xt = x as CudaTensor;
    for (const k of FP8_DECODE_KERNELS) {
      if (!skinnyGemm(gpu.ctx, (a as CudaTensor).ptr, true, xt.ptr, fp8Operand(w, k), M, N, K))
        throw new Error(`real o_proj: the ${k} kernel did not take M=${M}`);
      rows.push(
        row(
          `real o_proj [${N}, ${K}] M=${M}: FP8 ${k} kernel vs bf16 on the same values`,
          relErr(gpu.readF32(a), gpu.readF32(b)),
          BF16_LIMIT,
        ),
      );
    }
  }
  const [D, I, E, topK] = [6144, 3072, 128, 4];
  const gu = gpu.fp8!.quantize(filled([E + 1, 2 * I, D], 2 / Math.sqrt(D))) as CudaFp8Weight;
  const dn = gpu.fp8!.quantize(filled([E + 1, D, I], 2 / Math.sqrt(I))) as CudaFp8Weight;
  const e8 = { gateUp: gu, down: dn, firstExpert: 0, numLocalExperts: E + 1 };
  const eb = { gateUp: bf16Of(gu), down: bf16Of(dn), firstExpert: 0, numLocalExperts: E + 1 };
  // W8A16 sizes (W8A8 from 257 tokens is checked against the CPU in w8a8-check.ts).
  for (const T of [8, 256]) {
    const routes = moeRoutes(cpu, { T, D, I, E, topK }, 50 + T);
    const x = gpu.upload(groupScaled(randArray(T * D, 60 + T), D), [T, D], 'bf16');
    const ids = gpu.upload(routes.ids, [T, topK + 1], 'i32');
    const wts = gpu.upload(routes.wts, [T, topK + 1], 'f32');
    const run = (ew: ExpertWeights, path?: MoeGemmPath, k?: Fp8DecodeKernel) => {
      const out = gpu.alloc([T, D], 'bf16');
      moe(gpu.ctx, gpu.gemm, out, x, ids, wts, ew, MO, path, k);
      return gpu.readF32(out);
    };
    const ref = run(eb);
    const what = `real experts T=${T} (6144/3072, 128+1 top-4): FP8`;
    for (const k of FP8_DECODE_KERNELS)
      rows.push(
        row(
          `${what} tiles (${k}) vs bf16 on the same values`,
          relErr(run(e8, 'tiles', k), ref),
          BF16_LIMIT,
        ),
      );
    if (T > 64)
      rows.push(
        row(
          `${what} per-expert-cublas vs bf16 on the same values`,
          relErr(run(e8, 'per-expert-cublas'), ref),
          BF16_LIMIT,
        ),
      );
  }
  for (const t of [w, wb, gu, dn, eb.gateUp, eb.down]) gpu.free(t);
  return rows;
}

function countFp8(m: { weights: { layers: readonly { attn: { qProj: Tensor } }[] } }): number {
  return m.weights.layers.filter((l) => isFp8Weight(l.attn.qProj)).length;
}

async function modelChecks(cpu: CpuBackend, gpu: CudaBackend, golden: string): Promise<Row[]> {
  const rows: Row[] = [];
  const mx = join(golden, 'tiny-mxfp8');
  const ids = (JSON.parse(readFileSync(join(mx, 'expect.json'), 'utf8')) as { ids: number[] }).ids;
  const kept = await loadModel(mx, { backend: gpu });
  const plainGpu = await createCudaBackend({ fp8Weights: false });
  const got = await runForward(kept, ids);
  const deq = await runForward(await loadModel(mx, { backend: plainGpu }), ids);
  const ref = await runForward(await loadModel(mx, { backend: cpu }), ids);
  const flat = (r: typeof got) => r.logits.flat();
  rows.push({
    check: 'tiny-mxfp8: layers with FP8-resident q_proj',
    value: `${countFp8(kept)}/${kept.cfg.numLayers}`,
    limit: 'all',
    pass: countFp8(kept) === kept.cfg.numLayers,
  });
  rows.push({
    check: 'tiny-mxfp8: FP8 kept vs dequantized at load (GPU), logits differing',
    value: `${countDiff(flat(got), flat(deq))}`,
    limit: '0',
    pass: countDiff(flat(got), flat(deq)) === 0,
  });
  const s = compareLogits(got.logits, ref.logits);
  rows.push({
    check: 'tiny-mxfp8 FP8 on GPU vs CPU: median / max rel logit err',
    value: `${s.medianRel.toExponential(1)} / ${s.maxRel.toExponential(1)}`,
    limit: 'info (bf16 flips tiny routes)',
    pass: true,
  });
  const dir = mkdtempSync(join(tmpdir(), 'fp8-blk-'));
  try {
    const cfg = {
      ...PRESETS['tiny']!(),
      hidden_size: 512,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: 128,
      // MSA index dim 16 must be at least the rotary dim.
      rotary_dim: 16,
      partial_rotary_factor: 0.125,
      dense_intermediate_size: 512,
      intermediate_size: 256,
      shared_intermediate_size: 256,
      vocab_size: 1024,
    };
    writeRandomCheckpoint({ config: cfg, outDir: dir, seed: 5, dtype: 'fp8' });
    const tokens = Array.from({ length: 24 }, (_, i) => (i * 37 + 11) % 1024);
    const m = await loadModel(dir, { backend: gpu });
    const g = await runForward(m, tokens);
    const c = await runForward(await loadModel(dir, { backend: cpu }), tokens);
    const b = compareLogits(g.logits, c.logits);
    rows.push({
      check: 'block-FP8 random (D 512, Dh 128, I 256): FP8-resident layers',
      value: `${countFp8(m)}/${m.cfg.numLayers}`,
      limit: 'all',
      pass: countFp8(m) === m.cfg.numLayers,
    });
    rows.push(
      row(
        'block-FP8 random checkpoint, GPU FP8 vs CPU: median rel logit err',
        b.medianRel,
        LOGIT_LIMIT,
      ),
    );
    rows.push({
      check: 'block-FP8 random checkpoint: max rel / top-1 flips (margin-checked)',
      value: `${b.maxRel.toExponential(1)} / ${b.top1Mismatch}/${b.top1Checked}`,
      limit: 'info',
      pass: true,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

export async function checkFp8(cpu: CpuBackend, gpu: CudaBackend, golden: string): Promise<Row[]> {
  const rows: Row[] = [];
  const part = async (what: string, f: () => Row[] | Promise<Row[]>) => {
    try {
      rows.push(...(await f()));
    } catch (e) {
      console.error(`${what}: ${(e as Error).stack ?? String(e)}`);
      rows.push({ check: `fp8 ${what}`, value: 'error', limit: '-', pass: false });
    }
  };
  await part('quantize', () => quantizeChecks(gpu));
  await part('dense', () => denseChecks(cpu, gpu));
  await part('embedding', () => embeddingChecks(cpu, gpu));
  await part('moe', () => moeChecks(cpu, gpu));
  await part('real shapes', () => realShapeChecks(gpu, cpu));
  await part('models', () => modelChecks(cpu, gpu, golden));
  return rows;
}
