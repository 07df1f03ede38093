/**
 * The decode GEMMs of kernels/skinny-gemm.cu against the CPU backend on the same weights:
 * bf16, block FP8 (q8: E4M3 tensor cores on the split x; widened, W8A16; h8: widened to f16
 * against x scaled to f16) and MXFP8
 * weights (the CPU computes on code · scale in f32), ragged M and N, split-K off, forced and
 * as chosen, on activations whose 128-input groups differ in scale; f32 out (only summation
 * order differs, and q8's tensor-core sums) and bf16 out;
 * a split launch repeated gives the same bits (its counters reset, the reduction order is
 * fixed). The MoE FP8 kernels are checked through moe() in fp8-check.ts.
 */
import type { Backend } from '../../src/backend/backend.js';
import type { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import type { CudaFp8Weight } from '../../src/backend/cuda/cuda-fp8-weight.js';
import type { CudaTensor } from '../../src/backend/cuda/cuda-tensor.js';
import {
  bf16Operand,
  fp8Operand,
  fp8WidenOperand,
  skinnyGemm,
  skinnySliceRows,
  skinnySplits,
  type SkinnyOperand,
} from '../../src/backend/cuda/skinny-gemm.js';
import { fp8Gemv, gemvWarps, GEMV_MAX_M, type GemvTune } from '../../src/backend/cuda/fp8-gemv.js';
import { BLOCK_FP8, MXFP8, type Fp8Scaling } from '../../src/tensor/fp8-weight.js';
import { countDiff, groupScaled, randArray, relErr, type Row } from './check-util.js';
import { gpuFp8, randomFp8 } from './fp8-check.js';

/** f32 out: the same products, summed in another order. */
const F32_LIMIT = 1e-4;
/**
 * q8, f32 out: the E4M3 MMA accumulates a tile's products in the tensor core, which on Hopper
 * keeps about 13 mantissa bits (SageAttention2 measured FP22 accumulators for mma e4m3):
 * errors near 2^-13 of a tile's partials, still four times below one bf16 rounding (2^-9).
 */
const Q8_F32_LIMIT = 5e-4;
/** bf16 out: one rounding of each output. */
const BF16_LIMIT = 1e-2;

const GEMV_TUNES: GemvTune[] = [
  { u: 0, prefetch: true, pipe: true },
  { u: 2, prefetch: true, pipe: false },
  { u: 0, prefetch: false, pipe: false },
  { u: 0, prefetch: true, pipe: false, mt: 2 },
  { u: 2, prefetch: true, pipe: true, mt: 2 },
  { u: 0, prefetch: true, pipe: true, lb: true },
];

interface Case {
  readonly name: string;
  readonly op: SkinnyOperand;
  /** What the CPU multiplies by. */
  readonly cpuW: ReturnType<Backend['upload']>;
  readonly N: number;
  readonly K: number;
}

function cases(cpu: Backend, gpu: CudaBackend): Case[] {
  const N = 1000;
  const out: Case[] = [];
  const Kb = 960;
  const wb = randArray(N * Kb, 3, 1 / Math.sqrt(Kb));
  const gb = gpu.upload(wb, [N, Kb], 'bf16') as CudaTensor;
  out.push({
    name: 'bf16',
    op: bf16Operand(gb.ptr),
    cpuW: cpu.upload(wb, [N, Kb], 'bf16'),
    N,
    K: Kb,
  });
  for (const s of [BLOCK_FP8, MXFP8] as Fp8Scaling[]) {
    const K = 1024;
    const h = randomFp8([N, K], s, 13);
    const w = gpuFp8(gpu, [N, K], s, h) as CudaFp8Weight;
    const cpuW = cpu.upload(h.values, [N, K], 'bf16');
    out.push({
      name: s.kind === 'block' ? 'block FP8 q8' : 'MXFP8',
      op: fp8Operand(w, 'q8'),
      cpuW,
      N,
      K,
    });
    if (s.kind === 'block') {
      out.push({ name: 'block FP8 W8A16', op: fp8WidenOperand(w), cpuW, N, K });
      out.push({ name: 'block FP8 h8', op: fp8Operand(w, 'h8'), cpuW, N, K });
      out.push({ name: 'block FP8 v8 (GEMV)', op: fp8Operand(w, 'v8'), cpuW, N, K });
    }
  }
  return out;
}

function run(
  gpu: CudaBackend,
  c: Case,
  x: CudaTensor,
  M: number,
  f32: boolean,
  S?: number,
  rows?: number,
): Float32Array {
  const o = gpu.alloc([M, c.N], f32 ? 'f32' : 'bf16') as CudaTensor;
  if (!skinnyGemm(gpu.ctx, o.ptr, f32, x.ptr, c.op, M, c.N, c.K, S, rows))
    throw new Error(`skinny: ${c.name} M=${M} not taken`);
  return gpu.readF32(o);
}

export function checkSkinny(cpu: Backend, gpu: CudaBackend): Row[] {
  const rows: Row[] = [];
  const row = (check: string, err: number, limit: number): Row => ({
    check,
    value: err.toExponential(2),
    limit: limit.toExponential(0),
    pass: err <= limit,
  });
  for (const c of cases(cpu, gpu)) {
    // v8 (fp8-gemv.cu) takes M <= 32; its "splits" are the warps per block, it has no slices.
    const v8 = c.op.kind === 'v8';
    for (const M of [1, 5, 8, 13, 32, 33, 64].filter((m) => !v8 || m <= GEMV_MAX_M)) {
      const xh = groupScaled(randArray(M * c.K, 50 + M), c.K);
      const x = gpu.upload(xh, [M, c.K], 'bf16') as CudaTensor;
      const co = cpu.alloc([M, c.N], 'f32');
      cpu.matmul(co, cpu.upload(xh, [M, c.K], 'bf16'), c.cpuW);
      const ref = cpu.readF32(co);
      const sms = gpu.dev.smCount;
      const k = c.op.kind;
      const h = k === 'v8' ? M : skinnySliceRows(sms, k, M, c.N, c.K);
      const auto = k === 'v8' ? gemvWarps(sms, c.N, c.K) : skinnySplits(sms, k, M, c.N, c.K, h);
      let worst = 0;
      for (const S of [1, 3, 7]) worst = Math.max(worst, relErr(run(gpu, c, x, M, true, S), ref));
      // Token slices of 8 rows (ragged last slice at M = 13, 33), split and not.
      // v8's benchmark knobs (double-buffered registers, 2 tiles per buffer, no L2 prefetch,
      // two 16-row tiles per warp, 255 registers).
      if (v8)
        for (const t of GEMV_TUNES) {
          const o = gpu.alloc([M, c.N], 'f32') as CudaTensor;
          fp8Gemv(gpu.ctx, o.ptr, true, x.ptr, c.op, M, c.N, c.K, undefined, t);
          worst = Math.max(worst, relErr(gpu.readF32(o), ref));
        }
      if (M > 8 && !v8)
        for (const S of [1, 3]) worst = Math.max(worst, relErr(run(gpu, c, x, M, true, S, 8), ref));
      const f32Limit = c.op.kind === 'q8' ? Q8_F32_LIMIT : F32_LIMIT;
      const what = v8
        ? 'f32, 1/3/7 warps per block, knobs pipe / U=2 / no prefetch / MT=2 / MT=2 U=2 pipe / pipe LB'
        : `f32, splits 1/3/7${M > 8 ? ', slices of 8 x splits 1/3' : ''}`;
      rows.push(row(`skinny ${c.name} M=${M} N=${c.N} K=${c.K} ${what} vs CPU`, worst, f32Limit));
      const a = run(gpu, c, x, M, false);
      rows.push(
        row(
          `skinny ${c.name} M=${M} bf16 out, slices of ${h} x ${auto} splits (automatic) vs CPU`,
          relErr(a, ref),
          BF16_LIMIT,
        ),
      );
      if (M === 13) {
        const r1 = run(gpu, c, x, M, true, 5, 8);
        const r2 = run(gpu, c, x, M, true, 5, 8);
        rows.push({
          check: `skinny ${c.name} M=${M}: 5-way split x 2 slices repeated, values differing`,
          value: `${countDiff(r1, r2)}`,
          limit: '0',
          pass: countDiff(r1, r2) === 0,
        });
      }
    }
  }
  return rows;
}
