/**
 * The q8 decode GEMMs' activation split (skinny-x.cu skinny_split_x) against its host
 * twin: per 128 inputs of a row, s = 2^(e-8) for amax = m · 2^e (m in [0.5, 1)), hi =
 * E4M3(x / s), lo = E4M3(x / s - hi). Codes and scales must match bit for bit, and (hi + lo) · s
 * must be x exactly where |x| ≥ s/4 and within s · 2^-10 elsewhere (what the GEMM's
 * accuracy rests on). Data: mixed magnitudes, an outlier group, a zero group, a 1e-30 group.
 * The h8 kernels' f16 scaling (skinny_half_x) on the same data: s = 2^max(e-15, -126), and
 * f16(x / s) · s must be x exactly where |x / s| ≥ 2^-14 and within s · 2^-25 elsewhere.
 */
import type { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import type { CudaTensor } from '../../src/backend/cuda/cuda-tensor.js';
import { skinnyHalfX, skinnySplitX } from '../../src/backend/cuda/skinny-gemm.js';
import { F8E4M3_TABLE, f32ToE4m3 } from '../../src/tensor/dtype.js';
import { rng, type Row } from './check-util.js';
import { bf16ToF32, f32ToBf16 } from '../../src/tensor/dtype.js';

const GROUP = 128;

/** frexp's exponent of a positive finite f32 value: v = m · 2^e, m in [0.5, 1). */
function frexpExp(v: number): number {
  let e = Math.floor(Math.log2(v)) + 1;
  // Math.log2 may round across a power of two: fix e so that 2^(e-1) <= v < 2^e.
  while (2 ** (e - 1) > v) e--;
  while (2 ** e <= v) e++;
  return e;
}

export function splitRef(x: Float32Array, rows: number, K: number) {
  const codes = new Uint8Array(rows * K * 2);
  const scales = new Float32Array((rows * K) / GROUP);
  for (let gi = 0; gi < scales.length; gi++) {
    let amax = 0;
    for (let i = 0; i < GROUP; i++) amax = Math.max(amax, Math.abs(x[gi * GROUP + i]!));
    const E = amax > 0 ? frexpExp(amax) - 8 : 0;
    scales[gi] = 2 ** E;
    for (let i = 0; i < GROUP; i++) {
      const v = x[gi * GROUP + i]! / 2 ** E;
      const hi = f32ToE4m3(v);
      codes[gi * 2 * GROUP + i] = hi;
      codes[gi * 2 * GROUP + GROUP + i] = f32ToE4m3(v - F8E4M3_TABLE[hi]!);
    }
  }
  return { codes, scales };
}

function testData(rows: number, K: number): Float32Array {
  const r = rng(91);
  const x = new Float32Array(rows * K);
  for (let i = 0; i < x.length; i++) {
    const gi = Math.floor(i / GROUP);
    const mag = gi % 5 === 1 ? 1e-30 : 10 ** Math.round(r(3));
    x[i] = gi % 5 === 3 ? 0 : bf16ToF32(f32ToBf16(r(1) * mag));
  }
  x[7 * GROUP + 5] = bf16ToF32(f32ToBf16(1e4)); // an outlier: most of its group falls below s/4
  return x;
}

export function checkSplit(gpu: CudaBackend): Row[] {
  const [rows, K] = [6, 1024];
  const x = testData(rows, K);
  const xt = gpu.upload(x, [rows, K], 'bf16') as CudaTensor;
  const { xq, xs } = skinnySplitX(gpu.ctx, 'split-check', xt.ptr, rows, K);
  const codes = new Uint8Array(rows * K * 2);
  const scales = new Float32Array((rows * K) / GROUP);
  gpu.dev.download(codes, xq);
  gpu.dev.download(scales, xs);
  const ref = splitRef(x, rows, K);
  let codeDiff = 0;
  for (let i = 0; i < codes.length; i++) if (codes[i] !== ref.codes[i]) codeDiff++;
  let scaleDiff = 0;
  for (let i = 0; i < scales.length; i++) if (scales[i] !== ref.scales[i]) scaleDiff++;
  let inexactAbove = 0;
  let worst = 0;
  for (let i = 0; i < x.length; i++) {
    const gi = Math.floor(i / GROUP);
    const j = (i % GROUP) + gi * 2 * GROUP;
    const s = scales[gi]!;
    const back = (F8E4M3_TABLE[codes[j]!]! + F8E4M3_TABLE[codes[j + GROUP]!]!) * s;
    const d = Math.abs(back - x[i]!);
    if (Math.abs(x[i]!) >= s / 4 && d !== 0) inexactAbove++;
    worst = Math.max(worst, d / (s * 2 ** -10));
  }
  const ok = (v: number): boolean => v === 0;
  return [
    {
      check: 'q8 split: codes differing from the host twin',
      value: `${codeDiff}`,
      limit: '0',
      pass: ok(codeDiff),
    },
    {
      check: 'q8 split: scales differing from the host twin',
      value: `${scaleDiff}`,
      limit: '0',
      pass: ok(scaleDiff),
    },
    {
      check: 'q8 split: (hi + lo) · s ≠ x where |x| ≥ s/4',
      value: `${inexactAbove}`,
      limit: '0',
      pass: ok(inexactAbove),
    },
    {
      check: 'q8 split: max |(hi + lo) · s − x| / (s · 2^-10)',
      value: worst.toFixed(3),
      limit: '1',
      pass: worst <= 1,
    },
  ];
}

/** An f16 bit pattern's value. */
function f16Value(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (e === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (e - 15));
}

export function checkHalf(gpu: CudaBackend): Row[] {
  const [rows, K] = [6, 1024];
  const x = testData(rows, K);
  const xt = gpu.upload(x, [rows, K], 'bf16') as CudaTensor;
  const { xq, xs } = skinnyHalfX(gpu.ctx, 'half-check', xt.ptr, rows, K);
  const h = new Uint16Array(rows * K);
  const scales = new Float32Array((rows * K) / GROUP);
  gpu.dev.download(h, xq);
  gpu.dev.download(scales, xs);
  let scaleDiff = 0;
  let inexactAbove = 0;
  let worst = 0;
  for (let gi = 0; gi < scales.length; gi++) {
    let amax = 0;
    for (let i = 0; i < GROUP; i++) amax = Math.max(amax, Math.abs(x[gi * GROUP + i]!));
    const want = amax > 0 ? 2 ** Math.max(frexpExp(amax) - 15, -126) : 1;
    if (scales[gi] !== want) scaleDiff++;
    const s = scales[gi]!;
    for (let i = gi * GROUP; i < (gi + 1) * GROUP; i++) {
      const d = Math.abs(f16Value(h[i]!) * s - x[i]!);
      if (Math.abs(x[i]!) >= s * 2 ** -14 && d !== 0) inexactAbove++;
      worst = Math.max(worst, d / (s * 2 ** -25));
    }
  }
  return [
    {
      check: 'h8 f16 scaling: scales differing from 2^max(e-15, -126)',
      value: `${scaleDiff}`,
      limit: '0',
      pass: scaleDiff === 0,
    },
    {
      check: 'h8 f16 scaling: f16(x / s) · s ≠ x where |x / s| ≥ 2^-14',
      value: `${inexactAbove}`,
      limit: '0',
      pass: inexactAbove === 0,
    },
    {
      check: 'h8 f16 scaling: max |f16(x / s) · s − x| / (s · 2^-25)',
      value: worst.toFixed(3),
      limit: '1',
      pass: worst <= 1,
    },
  ];
}
