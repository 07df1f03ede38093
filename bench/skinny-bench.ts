/**
 * Decode GEMMs at MiniMax-M3's real shapes (kernels/skinny-gemm.cu against cuBLAS): device
 * time per GEMM inside a CUDA graph (timeGraphMs), the weight bytes it reads, and that as a
 * fraction of the measured device-copy bandwidth. Block FP8 both ways: widened to bf16 in
 * registers (w8a16), on the E4M3 tensor cores (q8; its time includes splitting x) and
 * widened to f16 by the hardware conversion (h8; its time includes scaling x to f16).
 *   node dist/gpu/bench/skinny-bench.js [--batches 1,8,32,64] [--splits 2,4,8]
 *        [--moe-tokens 8,64,512,2048 | none] [--kinds all | cublas,w8a16,h8,v8,w8a8,wg8,...]
 *        [--v8-warps 1,2,4,8] [--shapes lm_head,q_proj,...] [--out DIR]
 * and the MoE op at the real expert shape: tile kernels vs per-expert cuBLAS, bf16 and FP8.
 * Writes skinny-bench.json under --out (default $OUT or .).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCudaBackend, type CudaBackend } from '../src/backend/cuda/cuda-backend.js';
import type { CudaFp8Weight } from '../src/backend/cuda/cuda-fp8-weight.js';
import type { CudaTensor } from '../src/backend/cuda/cuda-tensor.js';
import {
  bf16Operand,
  fp8Operand,
  fp8WidenOperand,
  skinnyGemm,
  skinnyHalfX,
  skinnySliceRows,
  skinnySplits,
} from '../src/backend/cuda/skinny-gemm.js';
import type { SkinnyWeight } from '../src/backend/cuda/gemm-kernels.js';
import { fp8Gemv, gemvWarps, GEMV_MAX_M, type GemvTune } from '../src/backend/cuda/fp8-gemv.js';
import { CpuBackend } from '../src/backend/cpu/cpu-backend.js';
import { moe } from '../src/backend/cuda/moe-ops.js';
import type { MoeGemmPath } from '../src/backend/cuda/moe-expert-gemm.js';
import type { ExpertWeights } from '../src/backend/backend.js';
import type { Tensor } from '../src/tensor/tensor.js';
import { timeGraphMs } from './graph-time.js';
import { fp8Wgmma, wg8Fits, wg8Warpgroups } from '../src/backend/cuda/fp8-wgmma.js';
import { w8a8Matmul, w8a8QuantizeX } from '../src/backend/cuda/fp8-w8a8.js';
import { ltFor } from '../src/backend/cuda/lt-fp8-gemm.js';
import { median, randArray } from '../test/gpu/check-util.js';
import { moeRoutes } from '../test/gpu/moe-check.js';
import { smoke } from '../test/gpu/smoke.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

/** [name, N, K] of the decode GEMMs of one layer and the LM head. */
const SHAPES: [string, number, number][] = [
  ['q_proj', 8192, 6144],
  ['k_proj', 512, 6144],
  ['index k_proj', 128, 6144],
  ['o_proj', 6144, 8192],
  ['dense gate|up', 24576, 6144],
  ['dense down', 6144, 12288],
  ['lm_head', 200064, 6144],
];

/** Eager device time of f (ms-scale ops: the MoE; median of 20 after a warm-up). */
function timeMs(gpu: CudaBackend, f: () => void): number {
  f();
  const dev = gpu.dev;
  const ms: number[] = [];
  for (let r = 0; r < 20; r++) {
    const a = dev.createEvent();
    const b = dev.createEvent();
    dev.record(a);
    f();
    dev.record(b);
    ms.push(dev.elapsed(a, b));
  }
  return median(ms);
}

const MO = { alpha: 1.702, limit: 7 };

/** Weight copies per shape: at least 256 MB of bf16 in all (L2 is 60 MB). */
function copiesOf(N: number, K: number): number {
  return Math.max(1, Math.ceil(256e6 / (N * K * 2)));
}

/** The MoE op at the real expert shape (128 + 1 experts, top-4 + shared): tiles vs per-expert cuBLAS, bf16 and FP8. */
function moeBench(gpu: CudaBackend, tokens: number[]): Record<string, number>[] {
  const [D, I, E, topK] = [6144, 3072, 128, 4];
  const cpu = new CpuBackend();
  const filled = (shape: number[], scale: number): Tensor => {
    const t = gpu.alloc(shape, 'bf16');
    gpu.fillRandom(t, 5, scale);
    return t;
  };
  const gu = filled([E + 1, 2 * I, D], 2 / Math.sqrt(D));
  const dn = filled([E + 1, D, I], 2 / Math.sqrt(I));
  const b16: ExpertWeights = { gateUp: gu, down: dn, firstExpert: 0, numLocalExperts: E + 1 };
  const f8: ExpertWeights = { ...b16, gateUp: gpu.fp8!.quantize(gu), down: gpu.fp8!.quantize(dn) };
  const out: Record<string, number>[] = [];
  for (const T of tokens) {
    const routes = moeRoutes(cpu, { T, D, I, E, topK }, 70 + T);
    const x = gpu.upload(randArray(T * D, 80 + T), [T, D], 'bf16');
    const ids = gpu.upload(routes.ids, [T, topK + 1], 'i32');
    const wts = gpu.upload(routes.wts, [T, topK + 1], 'f32');
    const o = gpu.alloc([T, D], 'bf16');
    const r: Record<string, number> = { T };
    for (const [wn, ew] of [
      ['bf16', b16],
      ['fp8', f8],
    ] as const)
      for (const path of ['tiles', 'per-expert-cublas'] as MoeGemmPath[])
        r[`${wn} ${path} ms`] = +timeMs(gpu, () =>
          moe(gpu.ctx, gpu.gemm, o, x, ids, wts, ew, MO, path),
        ).toFixed(4);
    r['bf16 skinny tiles ms'] = +timeMs(gpu, () =>
      moe(gpu.ctx, gpu.gemm, o, x, ids, wts, b16, MO, 'tiles', undefined, 'skinny'),
    ).toFixed(4);
    for (const k of ['w8a16', 'h8', 'v8'] as const)
      r[`fp8 tiles ${k} ms`] = +timeMs(gpu, () =>
        moe(gpu.ctx, gpu.gemm, o, x, ids, wts, f8, MO, 'tiles', k),
      ).toFixed(4);
    console.log(JSON.stringify(r));
    out.push(r);
  }
  cpu.close();
  return out;
}

/** The FP8 kernels of one shape and batch: w8a16, q8, h8, v8 (GEMV) and their knobs. */
function fp8Kinds(a: {
  ctx: CudaBackend['ctx'];
  put: (key: string, bytes: number, f: (i: number) => void) => void;
  r: Record<string, number | string>;
  plan: (k: SkinnyWeight) => string;
  x: CudaTensor;
  o: number;
  out: CudaTensor;
  w8: CudaFp8Weight[];
  M: number;
  N: number;
  K: number;
  sweep: number[];
  v8Warps: number[];
}): void {
  const { ctx, put, r, plan, x, o, out, w8, M, N, K, sweep, v8Warps } = a;
  const bytes8 = N * K * (1 + 4 / 128);
  // W8A8 at decode rows (matmul takes it from W8A8_MIN_ROWS): x quantized, cuBLASLt FP8.
  const lt = ltFor(ctx.dev);
  put('w8a8 fp8', bytes8, (i) => w8a8Matmul(ctx, lt, out, x.ptr, w8[i]!, M));
  const x8 = ctx.ws.get('bench.x8', M * K);
  const xs = ctx.ws.get('bench.xs', ((M * K) / 128) * 4);
  put('w8a8 x quantize alone', M * K * 2, () => w8a8QuantizeX(ctx, x8, xs, x.ptr, M, K, M));
  r['w8a16 plan'] = plan('blk');
  put('w8a16 fp8', bytes8, (i) =>
    skinnyGemm(ctx, o, true, x.ptr, fp8WidenOperand(w8[i]!), M, N, K),
  );
  r['q8 plan'] = plan('q8');
  put('q8 fp8', bytes8, (i) => skinnyGemm(ctx, o, true, x.ptr, fp8Operand(w8[i]!, 'q8'), M, N, K));
  r['h8 plan'] = plan('h8');
  put('h8 fp8', bytes8, (i) => skinnyGemm(ctx, o, true, x.ptr, fp8Operand(w8[i]!, 'h8'), M, N, K));
  put('h8 x scaling alone', M * K * 2, () => skinnyHalfX(ctx, 'bench.x', x.ptr, M, K));
  for (const h of [32].filter((v) => v < M))
    put(`w8a16 rows=${h}`, bytes8, (i) =>
      skinnyGemm(ctx, o, true, x.ptr, fp8WidenOperand(w8[i]!), M, N, K, undefined, h),
    );
  for (const h of [32, 16].filter((v) => v < M))
    put(`h8 rows=${h}`, bytes8, (i) =>
      skinnyGemm(ctx, o, true, x.ptr, fp8Operand(w8[i]!, 'h8'), M, N, K, undefined, h),
    );
  for (const S of sweep)
    put(`h8 S=${S}`, bytes8, (i) =>
      skinnyGemm(ctx, o, true, x.ptr, fp8Operand(w8[i]!, 'h8'), M, N, K, S),
    );
  if (M > GEMV_MAX_M) return;
  // The wgmma kernel only where it runs (sm_90): elsewhere fp8Wgmma declines and a row would time nothing.
  if (wg8Fits(ctx, M, K, 128)) {
    const g8 = (i: number) => ({ ptr: w8[i]!.ptr, scales: w8[i]!.scales.ptr, group: 128 });
    r['wg8 warpgroups'] = wg8Warpgroups(ctx.dev.smCount, N, K);
    put('wg8 fp8', bytes8, (i) => fp8Wgmma(ctx, o, true, x.ptr, g8(i), M, N, K));
    for (const ks of [1, 2, 4])
      put(`wg8 warpgroups=${ks}`, bytes8, (i) => fp8Wgmma(ctx, o, true, x.ptr, g8(i), M, N, K, ks));
  }
  r['v8 warps'] = gemvWarps(ctx.dev.smCount, N, K);
  put('v8 fp8', bytes8, (i) => skinnyGemm(ctx, o, true, x.ptr, fp8Operand(w8[i]!, 'v8'), M, N, K));
  for (const ks of v8Warps)
    put(`v8 warps=${ks}`, bytes8, (i) =>
      skinnyGemm(ctx, o, true, x.ptr, fp8Operand(w8[i]!, 'v8'), M, N, K, ks),
    );
  const g = (i: number) => ({ ptr: w8[i]!.ptr, scales: w8[i]!.scales.ptr, group: 128 });
  for (const t of [
    { u: 0, prefetch: true, pipe: true },
    { u: 2, prefetch: true, pipe: false },
    { u: 0, prefetch: false, pipe: false },
    { u: 2, prefetch: true, pipe: false, mt: 2 },
    { u: 0, prefetch: true, pipe: false, lb: true },
    { u: 0, prefetch: true, pipe: true, lb: true },
  ] as GemvTune[])
    put(
      `v8 ${t.pipe ? `pipe U=${t.u || 'default'}` : `U=${t.u || 'default'}`}${t.prefetch ? '' : ' no-prefetch'}${t.mt ? ` MT=${t.mt}` : ''}${t.lb ? ' LB' : ''}`,
      bytes8,
      (i) => fp8Gemv(ctx, o, true, x.ptr, g(i), M, N, K, undefined, t),
    );
}

/** One weight shape at every batch: cuBLAS, the skinny kernels (bf16, each FP8 kind), variants. */
function benchShape(
  gpu: CudaBackend,
  bw: number,
  shape: [string, number, number],
  batches: number[],
  sweep: number[],
  kinds: Set<string>,
  v8Warps: number[],
): Record<string, number | string>[] {
  const [name, N, K] = shape;
  const ctx = gpu.ctx;
  const rows: Record<string, number | string>[] = [];
  const n = copiesOf(N, K);
  const wb: CudaTensor[] = [];
  const w8: CudaFp8Weight[] = [];
  for (let c = 0; c < n; c++) {
    wb.push(gpu.alloc([N, K], 'bf16') as CudaTensor);
    gpu.fillRandom(wb[c]!, 7 + c, 1 / Math.sqrt(K));
    w8.push(gpu.fp8!.quantize(wb[c]!) as CudaFp8Weight);
  }
  for (const M of batches) {
    const x = gpu.alloc([M, K], 'bf16') as CudaTensor;
    gpu.fillRandom(x, 3, 1);
    const o = gpu.alloc([M, N], 'f32') as CudaTensor;
    const bytes16 = N * K * 2;
    const r: Record<string, number | string> = { name, N, K, M, copies: n };
    const put = (key: string, bytes: number, f: (i: number) => void): void => {
      if (!kinds.has('all') && !kinds.has(key.split(' ')[0]!)) return;
      const ms = timeGraphMs(gpu, n, f);
      r[`${key} ms`] = +ms.toFixed(4);
      r[`${key} %bw`] = Math.round((100 * bytes) / (ms * 1e-3) / bw);
    };
    put('cublas bf16', bytes16, (i) =>
      gpu.gemm.gemm(o.ptr, 'f32', x.ptr, wb[i]!.ptr, 'bf16', M, N, K),
    );
    const sms = gpu.dev.smCount;
    const plan = (k: SkinnyWeight): string => {
      const h = skinnySliceRows(sms, k, M, N, K);
      return `${h} rows x ${skinnySplits(sms, k, M, N, K, h)}`;
    };
    r['bf16 plan'] = plan('b');
    put('skinny bf16', bytes16, (i) =>
      skinnyGemm(ctx, o.ptr, true, x.ptr, bf16Operand(wb[i]!.ptr), M, N, K),
    );
    // The same without token slices (before: all M in one block row).
    const S0 = skinnySplits(sms, 'b', M, N, K);
    put('skinny bf16 unsliced', bytes16, (i) =>
      skinnyGemm(ctx, o.ptr, true, x.ptr, bf16Operand(wb[i]!.ptr), M, N, K, S0, M),
    );
    fp8Kinds({ ctx, put, r, plan, x, o: o.ptr, out: o, w8, M, N, K, sweep, v8Warps });
    console.log(JSON.stringify(r));
    rows.push(r);
    gpu.free(x);
    gpu.free(o);
  }
  gpu.synchronize();
  for (const t of [...wb, ...w8]) gpu.free(t);
  return rows;
}

async function main(): Promise<void> {
  const out = arg('out', process.env['OUT'] ?? '.');
  const batches = arg('batches', '1,8,32,64').split(',').map(Number);
  const sp = arg('splits', '2,4,8');
  const sweep = sp === 'none' ? [] : sp.split(',').map(Number);
  const gpu = await createCudaBackend({});
  const ceil = smoke(gpu);
  const bw = ceil.copyTBs * 1e12;
  const rows: Record<string, number | string>[] = [];
  const kinds = new Set(arg('kinds', 'all').split(','));
  const v8Warps = arg('v8-warps', '1,2,4,8').split(',').map(Number);
  const names = arg('shapes', 'all').split(',');
  for (const shape of SHAPES.filter((s) => names.includes('all') || names.includes(s[0])))
    rows.push(...benchShape(gpu, bw, shape, batches, sweep, kinds, v8Warps));
  const mt = arg('moe-tokens', '8,64,512,2048');
  const moeRows = mt === 'none' ? [] : moeBench(gpu, mt.split(',').map(Number));
  mkdirSync(out, { recursive: true });
  writeFileSync(
    join(out, 'skinny-bench.json'),
    JSON.stringify({ ceil, rows, moe: moeRows }, null, 2),
  );
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 2;
});
