/**
 * The wgmma block-FP8 decode GEMM (kernels/fp8-wgmma.cu, fp8-wgmma.ts) against the CPU backend on
 * the same quantized weights: N = 1000 rows (a ragged last 64-row block), K = 1024 and 6144 (8
 * and 48 tiles), M = 1, 5, 8, 13, 16, 27, 32 (each of the 8/16/32-column forms, ragged), 1, 3 and
 * the automatic number of warpgroups per block, f32 and bf16 out; and a repeated launch bit for
 * bit (the K-split sum is in warpgroup order).
 */
import type { Backend } from '../../src/backend/backend.js';
import type { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import type { CudaFp8Weight } from '../../src/backend/cuda/cuda-fp8-weight.js';
import type { CudaTensor } from '../../src/backend/cuda/cuda-tensor.js';
import { fp8Wgmma, wg8Warpgroups } from '../../src/backend/cuda/fp8-wgmma.js';
import { BLOCK_FP8 } from '../../src/tensor/fp8-weight.js';
import { countDiff, groupScaled, randArray, relErr, type Row } from './check-util.js';
import { gpuFp8, randomFp8 } from './fp8-check.js';

/** f32 out: the products are exact (bf16 x bf16-exact codes); only summation order differs. */
const F32_LIMIT = 1e-4;
/** bf16 out: one rounding of each output. */
const BF16_LIMIT = 1e-2;

export function checkWgmmaGemm(cpu: Backend, gpu: CudaBackend): Row[] {
  if (gpu.dev.arch !== 'sm_90') {
    // The kernel is compiled for sm_90a only and fp8Wgmma declines elsewhere: no rows, not a pass.
    console.log(`wgmma FP8 GEMM: skipped, ${gpu.dev.arch} is not sm_90`);
    return [];
  }
  const rows: Row[] = [];
  const N = 1000;
  for (const K of [1024, 6144]) {
    const h = randomFp8([N, K], BLOCK_FP8, 17 + K);
    const w = gpuFp8(gpu, [N, K], BLOCK_FP8, h) as CudaFp8Weight;
    const cw = cpu.upload(h.values, [N, K], 'bf16');
    const op = { ptr: w.ptr, scales: w.scales.ptr, group: BLOCK_FP8.group };
    for (const M of [1, 5, 8, 13, 16, 27, 32]) {
      const xh = groupScaled(randArray(M * K, 90 + M), K);
      const x = gpu.upload(xh, [M, K], 'bf16') as CudaTensor;
      const co = cpu.alloc([M, N], 'f32');
      cpu.matmul(co, cpu.upload(xh, [M, K], 'bf16'), cw);
      const ref = cpu.readF32(co);
      const o = gpu.alloc([M, N], 'f32') as CudaTensor;
      const ob = gpu.alloc([M, N], 'bf16') as CudaTensor;
      const go = (ks?: number): Float32Array => {
        if (!fp8Wgmma(gpu.ctx, o.ptr, true, x.ptr, op, M, N, K, ks))
          throw new Error(`wgmma GEMM: M=${M} K=${K} not taken`);
        return gpu.readF32(o);
      };
      let worst = 0;
      for (const ks of [1, 3, undefined]) worst = Math.max(worst, relErr(go(ks), ref));
      const auto = wg8Warpgroups(gpu.dev.smCount, N, K);
      rows.push({
        check: `wgmma FP8 GEMM M=${M} N=${N} K=${K} f32, 1/3/${auto} warpgroups vs CPU`,
        value: worst.toExponential(2),
        limit: F32_LIMIT.toExponential(0),
        pass: worst <= F32_LIMIT,
      });
      fp8Wgmma(gpu.ctx, ob.ptr, false, x.ptr, op, M, N, K);
      const eb = relErr(gpu.readF32(ob), ref);
      rows.push({
        check: `wgmma FP8 GEMM M=${M} K=${K} bf16 out vs CPU`,
        value: eb.toExponential(2),
        limit: BF16_LIMIT.toExponential(0),
        pass: eb <= BF16_LIMIT,
      });
      if (M === 27) {
        const r1 = go(3);
        const d = countDiff(r1, go(3));
        rows.push({
          check: `wgmma FP8 GEMM M=${M} K=${K}: 3 warpgroups repeated, values differing`,
          value: `${d}`,
          limit: '0',
          pass: d === 0,
        });
      }
      for (const t of [x, o, ob]) gpu.free(t);
    }
    gpu.free(w);
  }
  return rows;
}
