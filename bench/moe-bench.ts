/**
 * The MoE layer's expert GEMMs on one GPU at MiniMax-M3's expert shape (D 6144, I 3072, 128
 * routed experts top-4 plus the shared one): the tile kernels of moe.cu against one cuBLAS GEMM
 * per expert and one grouped cuBLAS GEMM per projection, over token counts, after the correctness checks of test/gpu/moe-check.ts.
 *   npm run bench:moe-gpu [-- --tokens 64,256,512,1024,2048,4096,8192] [--iters 10] [--out DIR]
 * Device time between CUDA events around the whole op (routing permutation to combine, the
 * per-expert path's host read of the counts included), median of --iters after one warm-up.
 * Writes moe-bench.json and moe-bench.md under --out (default $OUT or .); exits 1 if a check fails.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CpuBackend } from '../src/backend/cpu/cpu-backend.js';
import { createCudaBackend, type CudaBackend } from '../src/backend/cuda/cuda-backend.js';
import type { MoeGemmPath } from '../src/backend/cuda/moe-expert-gemm.js';
import { median, printTable } from '../test/gpu/check-util.js';
import {
  checkMoePaths,
  moeInputs,
  moeRoutes,
  runGpuMoe,
  type MoeCase,
} from '../test/gpu/moe-check.js';
import { smoke } from '../test/gpu/smoke.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

function timePath(
  gpu: CudaBackend,
  c: MoeCase,
  inp: ReturnType<typeof moeInputs>,
  path: MoeGemmPath,
  iters: number,
): number {
  const dev = gpu.dev;
  const a = dev.createEvent();
  const b = dev.createEvent();
  gpu.free(runGpuMoe(gpu, c, inp, path));
  const ms: number[] = [];
  for (let i = 0; i < iters; i++) {
    dev.record(a);
    const out = runGpuMoe(gpu, c, inp, path);
    dev.record(b);
    ms.push(dev.elapsed(a, b));
    gpu.free(out);
  }
  dev.destroyEvent(a);
  dev.destroyEvent(b);
  return median(ms);
}

interface Row {
  tokens: number;
  expertsWithRows: number;
  tilesMs: number;
  cublasMs: number;
  groupedMs: number;
  speedup: number;
  tilesTflops: number;
  cublasTflops: number;
  groupedTflops: number;
  rooflineMs: number;
}

async function main(): Promise<void> {
  const out = arg('out', process.env['OUT'] ?? '.');
  const tokens = arg('tokens', '64,256,512,1024,2048,4096,8192').split(',').map(Number);
  const iters = Number(arg('iters', '10'));
  const gpu = await createCudaBackend();
  const cpu = new CpuBackend();
  const ceil = smoke(gpu);
  const checks = checkMoePaths(cpu, gpu);
  printTable('MoE expert GEMMs: per-expert cuBLAS and tile kernels vs CPU and each other', checks);
  const rows: Row[] = [];
  const base = { D: 6144, I: 3072, E: 128, topK: 4 };
  for (const T of tokens) {
    const c = { ...base, T };
    const routes = moeRoutes(cpu, c, 90 + T);
    const inp = moeInputs(gpu, c, routes, 7);
    const used = new Set(routes.ids).size;
    const flops = T * (c.topK + 1) * 2 * 3 * c.D * c.I;
    const bytes = used * 3 * c.D * c.I * 2 + T * c.D * 4;
    const tilesMs = timePath(gpu, c, inp, 'tiles', iters);
    const cublasMs = timePath(gpu, c, inp, 'per-expert-cublas', iters);
    const groupedMs = timePath(gpu, c, inp, 'grouped-cublas', iters);
    const gemmMs = (flops / (ceil.gemmTflops * 1e12)) * 1e3;
    const memMs = (bytes / (ceil.copyTBs * 1e12)) * 1e3;
    rows.push({
      tokens: T,
      expertsWithRows: used,
      tilesMs,
      cublasMs,
      groupedMs,
      speedup: tilesMs / cublasMs,
      tilesTflops: flops / tilesMs / 1e9,
      cublasTflops: flops / cublasMs / 1e9,
      groupedTflops: flops / groupedMs / 1e9,
      rooflineMs: Math.max(gemmMs, memMs),
    });
    for (const t of Object.values(inp)) gpu.free(t);
    console.log(JSON.stringify(rows.at(-1)));
  }
  const md = [
    `MoE expert GEMMs, D 6144, I 3072, 128 + 1 experts, top-4 + shared, bf16; GEMM ceiling ${ceil.gemmTflops.toFixed(0)} TFLOP/s, copy ${ceil.copyTBs.toFixed(2)} TB/s (same run).`,
    '',
    '| tokens | experts with rows | tile kernels ms | per-expert cuBLAS ms | grouped cuBLAS ms | speed-up (tiles / per-expert) | tiles TFLOP/s | cuBLAS TFLOP/s | grouped TFLOP/s | roofline ms |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.tokens} | ${r.expertsWithRows} | ${r.tilesMs.toFixed(3)} | ${r.cublasMs.toFixed(3)} | ${r.groupedMs.toFixed(3)} | ${r.speedup.toFixed(2)} | ${r.tilesTflops.toFixed(0)} | ${r.cublasTflops.toFixed(0)} | ${r.groupedTflops.toFixed(0)} | ${r.rooflineMs.toFixed(3)} |`,
    ),
  ].join('\n');
  console.log(`\n${md}`);
  mkdirSync(out, { recursive: true });
  writeFileSync(
    join(out, 'moe-bench.json'),
    JSON.stringify({ ceilings: ceil, checks, rows }, null, 2),
  );
  writeFileSync(join(out, 'moe-bench.md'), `${md}\n`);
  process.exitCode = checks.every((r) => r.pass) ? 0 : 1;
}

await main();
