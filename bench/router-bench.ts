/**
 * The MoE router GEMM at MiniMax-M3's shape (logits [M, 128] = x [M, 6144] · W^T, W f32) on
 * its two CUDA paths, to place BF16X3_MIN_ROWS (cuda/matmul-bf16x3.ts): the f32 path (x
 * converted to f32, f32 cuBLAS GEMM) on a plain f32 weight, the bf16x3 path (one bf16 GEMM
 * over the three parts, then their sum) forced at every M, and `matmul` on a split weight
 * (what the model runs: the threshold's choice). Device time per call inside a CUDA graph of
 * one call per weight copy (enough copies that L2 holds none of the next one's bytes),
 * replayed 10 times after a warm-up; the median over the copies.
 *   node dist/gpu/bench/router-bench.js [--rows 1,8,64,128,192,256,384,512,1024,2048,8192] [--out DIR]
 * Writes router-bench.json under --out (default $OUT or .).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCudaBackend } from '../src/backend/cuda/cuda-backend.js';
import type { CudaTensor } from '../src/backend/cuda/cuda-tensor.js';
import { BF16X3_MIN_ROWS, matmulBf16x3 } from '../src/backend/cuda/matmul-bf16x3.js';
import { SplitF32Weight } from '../src/backend/cuda/split-f32-weight.js';
import type { Tensor } from '../src/tensor/tensor.js';
import { timeGraphMs } from './graph-time.js';

const [E, D] = [128, 6144];
/** Copies of each weight: 24 × (3.1 MB f32 + 4.7 MB parts) is three times H200's 60 MB L2. */
const COPIES = 24;

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

async function main(): Promise<void> {
  const out = arg('out', process.env['OUT'] ?? '.');
  const rowsList = arg('rows', '1,8,64,128,192,256,384,512,1024,2048,8192').split(',').map(Number);
  const gpu = await createCudaBackend();
  const plain: Tensor[] = [];
  const split: SplitF32Weight[] = [];
  for (let c = 0; c < COPIES; c++) {
    const p = gpu.alloc([E, D], 'f32');
    gpu.fillRandom(p, 100 + c, 0.02);
    plain.push(p);
    const s = gpu.allocF32Weight([E, D]);
    if (!(s instanceof SplitF32Weight)) throw new Error('allocF32Weight: not a split weight');
    gpu.fillRandom(s, 100 + c, 0.02);
    split.push(s);
  }
  const results: Record<string, number | string>[] = [];
  for (const M of rowsList) {
    const x = gpu.alloc([M, D], 'bf16');
    gpu.fillRandom(x, 7, 1);
    const o = gpu.alloc([M, E], 'f32') as CudaTensor;
    const f32Ms = timeGraphMs(gpu, COPIES, (i) => gpu.matmul(o, x, plain[i]!));
    const bf16x3Ms = timeGraphMs(gpu, COPIES, (i) =>
      matmulBf16x3(gpu.ctx, gpu.gemm, o, x as CudaTensor, split[i]!, M),
    );
    const chosenMs = timeGraphMs(gpu, COPIES, (i) => gpu.matmul(o, x, split[i]!));
    const tflops = (ms: number) => (2 * M * E * D) / (ms * 1e9);
    const row = {
      M,
      f32_ms: Number(f32Ms.toFixed(4)),
      bf16x3_ms: Number(bf16x3Ms.toFixed(4)),
      matmul_ms: Number(chosenMs.toFixed(4)),
      matmul_path: M >= BF16X3_MIN_ROWS ? 'bf16x3' : 'f32',
      f32_tflops: Number(tflops(f32Ms).toFixed(1)),
      bf16x3_tflops: Number(tflops(bf16x3Ms).toFixed(1)),
    };
    results.push(row);
    console.log(
      `M=${String(M).padStart(5)}  f32 ${f32Ms.toFixed(4)} ms (${row.f32_tflops} TFLOP/s)  ` +
        `bf16x3 ${bf16x3Ms.toFixed(4)} ms (${row.bf16x3_tflops})  matmul ${chosenMs.toFixed(4)} ms [${row.matmul_path}]  ` +
        `bf16x3/f32 ${(bf16x3Ms / f32Ms).toFixed(2)}`,
    );
    gpu.free(x);
    gpu.free(o);
  }
  mkdirSync(out, { recursive: true });
  writeFileSync(
    join(out, 'router-bench.json'),
    JSON.stringify({ minRows: BF16X3_MIN_ROWS, results }, null, 2),
  );
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 2;
});
