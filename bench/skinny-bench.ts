/**
 * Decode GEMMs at MiniMax-M3's real shapes (kernels/skinny-gemm.cu against the kernels it
 * replaces and cuBLAS): device time per GEMM (CUDA events, median of 20 after warm-up), the
 * weight bytes it reads, and that as a fraction of the measured device-copy bandwidth.
 *   node dist/gpu/bench/skinny-bench.js [--batches 1,8,32,64] [--splits 2,4,8]
 *        [--moe-tokens 8,64,512,2048] [--out DIR]
 * and the MoE op at the real expert shape: tile kernels vs per-expert cuBLAS, bf16 and FP8.
 * Writes skinny-bench.json under --out (default $OUT or .).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCudaBackend, type CudaBackend } from '../src/backend/cuda/cuda-backend.js';
import type { CudaFp8Weight } from '../src/backend/cuda/cuda-fp8-weight.js';
import type { CudaTensor } from '../src/backend/cuda/cuda-tensor.js';
import { fp8SkinnyGemm } from '../src/backend/cuda/fp8-ops.js';
import { skinnyGemm as oldSkinny } from '../src/backend/cuda/moe-ops.js';
import {
  bf16Operand,
  fp8Operand,
  skinnyGemm,
  skinnySplits,
} from '../src/backend/cuda/skinny-gemm.js';
import { CpuBackend } from '../src/backend/cpu/cpu-backend.js';
import { moe } from '../src/backend/cuda/moe-ops.js';
import type { MoeGemmPath } from '../src/backend/cuda/moe-expert-gemm.js';
import type { ExpertWeights } from '../src/backend/backend.js';
import type { Tensor } from '../src/tensor/tensor.js';
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
  ['o_proj', 6144, 8192],
  ['dense gate|up', 24576, 6144],
  ['dense down', 6144, 12288],
  ['lm_head', 200064, 6144],
];

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
          moe(gpu.ctx, gpu.gemm, o, x, ids, wts, ew, { alpha: 1.702, limit: 7 }, path),
        ).toFixed(4);
    console.log(JSON.stringify(r));
    out.push(r);
  }
  cpu.close();
  return out;
}

async function main(): Promise<void> {
  const out = arg('out', process.env['OUT'] ?? '.');
  const batches = arg('batches', '1,8,32,64').split(',').map(Number);
  const sweep = arg('splits', '2,4,8').split(',').map(Number);
  const gpu = await createCudaBackend({});
  const ceil = smoke(gpu);
  const bw = ceil.copyTBs * 1e12;
  const ctx = gpu.ctx;
  const rows: Record<string, number | string>[] = [];
  for (const [name, N, K] of SHAPES) {
    const wb = gpu.alloc([N, K], 'bf16') as CudaTensor;
    gpu.fillRandom(wb, 7, 1 / Math.sqrt(K));
    const w8 = name === 'lm_head' ? null : (gpu.fp8!.quantize(wb) as CudaFp8Weight);
    for (const M of batches) {
      const x = gpu.alloc([M, K], 'bf16') as CudaTensor;
      gpu.fillRandom(x, 3, 1);
      const o = gpu.alloc([M, N], 'f32') as CudaTensor;
      const bytes16 = N * K * 2;
      const bytes8 = N * K * (1 + 4 / 128);
      const r: Record<string, number | string> = { name, N, K, M };
      const put = (key: string, ms: number, bytes: number): void => {
        r[`${key} ms`] = +ms.toFixed(4);
        r[`${key} %bw`] = Math.round((100 * bytes) / (ms * 1e-3) / bw);
      };
      put(
        'cublas bf16',
        timeMs(gpu, () => gpu.gemm.gemm(o.ptr, 'f32', x.ptr, wb.ptr, 'bf16', M, N, K)),
        bytes16,
      );
      if (oldSkinny(ctx, o.ptr, true, x.ptr, wb.ptr, M, N, K))
        put(
          'old bf16',
          timeMs(gpu, () => oldSkinny(ctx, o.ptr, true, x.ptr, wb.ptr, M, N, K)),
          bytes16,
        );
      const nb = bf16Operand(wb.ptr);
      r['bf16 splits'] = skinnySplits(gpu.dev.smCount, 'b', M, N, K);
      put(
        'new bf16',
        timeMs(gpu, () => skinnyGemm(ctx, o.ptr, true, x.ptr, nb, M, N, K)),
        bytes16,
      );
      if (w8) {
        put(
          'old fp8',
          timeMs(gpu, () => fp8SkinnyGemm(ctx, o.ptr, true, x.ptr, w8, M)),
          bytes8,
        );
        const n8 = fp8Operand(w8);
        r['fp8 splits'] = skinnySplits(gpu.dev.smCount, 'blk', M, N, K);
        put(
          'new fp8',
          timeMs(gpu, () => skinnyGemm(ctx, o.ptr, true, x.ptr, n8, M, N, K)),
          bytes8,
        );
        for (const S of sweep)
          put(
            `fp8 S=${S}`,
            timeMs(gpu, () => skinnyGemm(ctx, o.ptr, true, x.ptr, n8, M, N, K, S)),
            bytes8,
          );
      }
      console.log(JSON.stringify(r));
      rows.push(r);
    }
    gpu.synchronize();
  }
  const moeRows = moeBench(gpu, arg('moe-tokens', '8,64,512,2048').split(',').map(Number));
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
