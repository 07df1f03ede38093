/**
 * FFI smoke and device ceilings: libraries found, NVRTC compile of every kernel file (cold and
 * cached), cuBLAS bf16 GEMM rate (8192³), device-to-device copy bandwidth, kernel launch cost
 * eager versus inside a CUDA graph. Timings with CUDA events, medians after warm-up.
 */
import type { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import { launchKernel } from '../../src/backend/cuda/kernel-launch.js';
import {
  ADD,
  MOE_MMA_GU,
  MSA_SELECT,
  RMSNORM_BLOCK,
  ROUTER_TOPK,
} from '../../src/backend/cuda/kernel-table.js';
import { strideGrid } from '../../src/backend/cuda/op-context.js';
import { median } from './check-util.js';

export interface Ceilings {
  gemmTflops: number;
  /**
   * The same GEMM after ~140 ms of back-to-back GEMMs, timed over the next ~140 ms: the rate
   * under sustained load (clocks and power settle), to compare work that itself runs for
   * hundreds of ms back to back (e.g. a stream of 8k prefills) like with like.
   */
  gemmSustainedTflops: number;
  copyTBs: number;
  launchUsEager: number;
  launchUsGraph: number;
}

const KERNEL_FILES: Record<string, string> = {
  elementwise: ADD.names[0]!,
  norm: RMSNORM_BLOCK.names[1]!,
  msa: MSA_SELECT.names[0]!,
  router: ROUTER_TOPK.names[1]!,
  moe: MOE_MMA_GU.names[0]!,
};

function timeEvents(gpu: CudaBackend, reps: number, inner: number, fn: () => void): number {
  const dev = gpu.dev;
  const a = dev.createEvent();
  const b = dev.createEvent();
  fn();
  dev.sync();
  const ms: number[] = [];
  for (let r = 0; r < reps; r++) {
    dev.record(a);
    for (let i = 0; i < inner; i++) fn();
    dev.record(b);
    ms.push(dev.elapsed(a, b) / inner);
  }
  return median(ms);
}

export function smoke(gpu: CudaBackend): Ceilings {
  const dev = gpu.dev;
  const mem = dev.memInfo();
  console.log(
    `device ${dev.name} (${dev.arch}, ${dev.smCount} SMs), ${(mem.free / 2 ** 30).toFixed(1)} of ${(mem.total / 2 ** 30).toFixed(1)} GiB free`,
  );
  console.log(
    `libraries: ${Object.entries(dev.libs.paths)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  );
  console.log(`nvrtc ${gpu.ctx.kernels.nvrtcVersion}, cuBLAS ${gpu.gemm.version}`);
  for (const [file, fn] of Object.entries(KERNEL_FILES)) {
    const t0 = performance.now();
    gpu.ctx.kernels.fn(file, fn);
    console.log(
      `  kernels/${file}.cu: ${(performance.now() - t0).toFixed(0)} ms (compile or cache)`,
    );
  }
  const st = gpu.ctx.kernels.stats;
  console.log(
    `  compiled ${st.compiled}, from cache ${st.cached}, NVRTC time ${st.compileMs.toFixed(0)} ms`,
  );

  // cuBLAS bf16 GEMM 8192^3 on random data.
  const n = 8192;
  const A = gpu.alloc([n, n], 'bf16');
  const Bm = gpu.alloc([n, n], 'bf16');
  const C = gpu.alloc([n, n], 'bf16');
  gpu.fillRandom(A, 1, 1);
  gpu.fillRandom(Bm, 2, 1);
  const gemmMs = timeEvents(gpu, 5, 10, () => gpu.matmul(C, A, Bm));
  const gemmTflops = (2 * n ** 3) / (gemmMs * 1e-3) / 1e12;
  console.log(
    `cuBLAS bf16 GEMM 8192^3: ${gemmMs.toFixed(3)} ms = ${gemmTflops.toFixed(0)} TFLOP/s`,
  );
  for (let i = 0; i < 100; i++) gpu.matmul(C, A, Bm);
  const sustainedMs = timeEvents(gpu, 5, 20, () => gpu.matmul(C, A, Bm));
  const gemmSustainedTflops = (2 * n ** 3) / (sustainedMs * 1e-3) / 1e12;
  console.log(
    `cuBLAS bf16 GEMM 8192^3 sustained (after 100 back to back, 5 x 20 timed): ${sustainedMs.toFixed(3)} ms = ${gemmSustainedTflops.toFixed(0)} TFLOP/s`,
  );
  for (const t of [A, Bm, C]) gpu.free(t);

  // Device-to-device copy, 2 GiB each way counted as read + write.
  const bytes = 2 * 2 ** 30;
  const src = dev.malloc(bytes);
  const dst = dev.malloc(bytes);
  dev.memsetAsync(src, 1, bytes);
  const copyMs = timeEvents(gpu, 5, 3, () => dev.copyAsync(dst, src, bytes));
  const copyTBs = (2 * bytes) / (copyMs * 1e-3) / 1e12;
  console.log(
    `device copy 2 GiB: ${copyMs.toFixed(3)} ms = ${copyTBs.toFixed(2)} TB/s (read + write)`,
  );
  dev.free(src, bytes);
  dev.free(dst, bytes);

  // Launch cost: a tiny kernel, eager (host time per launch) and replayed from a graph.
  const x = gpu.alloc([256], 'f32');
  const s = x.storage;
  if (s.device !== 'cuda') throw new Error('smoke: not a CUDA tensor');
  const shape = { grid: strideGrid(gpu.ctx, 256), block: [256, 1, 1] } as const;
  const launch = (): void =>
    launchKernel(gpu.ctx, ADD, 'add_fff', shape, { out: s.ptr, a: s.ptr, b: s.ptr, n: 256 });
  for (let i = 0; i < 200; i++) launch();
  dev.sync();
  const N = 5000;
  const h0 = performance.now();
  for (let i = 0; i < N; i++) launch();
  const launchUsEager = ((performance.now() - h0) * 1e3) / N;
  dev.sync();
  const graph = dev.capture(() => {
    for (let i = 0; i < 1000; i++) launch();
  });
  const graphMs = timeEvents(gpu, 5, 3, () => graph.launch());
  const launchUsGraph = (graphMs * 1e3) / 1000;
  graph.destroy();
  console.log(
    `launch: ${launchUsEager.toFixed(2)} us host time eager, ${launchUsGraph.toFixed(2)} us per kernel in a graph`,
  );
  return { gemmTflops, gemmSustainedTflops, copyTBs, launchUsEager, launchUsGraph };
}
