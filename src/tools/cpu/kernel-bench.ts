import { loadavg } from 'node:os';
import type { MsaOptions } from '../../backend/backend.js';
import { layoutBatch, type ForwardBatch } from '../../backend/forward-batch.js';
import { pagedAttention } from '../../backend/cpu/ops/attention.js';
import { matmulF32 } from '../../backend/cpu/ops/matmul.js';
import { msaSelectBlocks } from '../../backend/cpu/ops/msa-select.js';
import { PackedPanels, packPanels } from '../../backend/cpu/packed-panels.js';
import type { CpuKernels } from '../../backend/cpu/wasm/cpu-kernels.js';
import { median } from './interleave.js';

export interface KernelRow {
  readonly what: string;
  readonly kernel: string;
  readonly ms: number;
  readonly gflops: number;
  readonly load: number;
}

/** Median of `reps` timed calls after one untimed warm-up call. */
function time(fn: () => void, reps: number): number {
  fn();
  const ts: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    fn();
    ts.push(performance.now() - t0);
  }
  return median(ts);
}

function fill(a: Float32Array, seed: number): Float32Array {
  let s = seed;
  for (let i = 0; i < a.length; i++) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    a[i] = s / 2 ** 31 - 0.5;
  }
  return a;
}

/**
 * out[M, N] = x · wᵀ on `k` (its threads): the register-blocked kernel on packed float32
 * weights (what the backend runs for these shapes; labelled "fma" where it fuses
 * multiply-add), the same on packed bf16 weights (a bf16 checkpoint), the row-major kernel
 * (before the packed one) and, with `js`, the JS kernel.
 */
export function benchMatmul(
  k: CpuKernels,
  label: string,
  M: number,
  N: number,
  K: number,
  js: boolean,
): KernelRow[] {
  const x = fill(k.heap.f32(M * K), 1);
  const w = fill(k.heap.f32(N * K), 2);
  const packed = new PackedPanels(packPanels(w, k.heap.f32(N * K), N, K));
  const bits = Uint16Array.from(new Uint32Array(w.buffer, w.byteOffset, w.length), (b) => b >>> 16);
  const packedBf16 = new PackedPanels(packPanels(bits, k.heap.u16(N * K), N, K));
  const out = k.heap.f32(M * N);
  const flop = 2 * M * N * K;
  const row = (kernel: string, ms: number): KernelRow => ({
    what: `${M}x${N}x${K}`,
    kernel,
    ms,
    gflops: flop / (ms * 1e6),
    load: loadavg()[0]!,
  });
  const fma = k.fma ? ', fma' : ''; // the packed kernels fuse multiply-add
  const rows = [
    row(
      `${label}${fma}`,
      time(() => k.matmul(out, x, packed, M, N, K), 9),
    ),
    row(
      `${label}, bf16 w${fma}`,
      time(() => k.matmul(out, x, packedBf16, M, N, K), 9),
    ),
    row(
      `${label}, row-major`,
      time(() => k.matmul(out, x, w, M, N, K), 9),
    ),
  ];
  if (js)
    rows.push(
      row(
        'js f64',
        time(() => matmulF32(out, x, w, M, N, K), 3),
      ),
    );
  for (const a of [x, w, packed.data, packedBf16.data, out]) k.heap.free(a);
  return rows;
}

// The bundled model's attention shapes.
const H = 4;
const HKV = 2;
const DH = 64;
const S = 16;
const MSA: MsaOptions = { numIndexHeads: 2, indexDim: 64, topk: 4, initBlocks: 0, localBlocks: 1 };

/**
 * One dense attention, one MSA selection and one sparse attention over the selected blocks
 * (what one dense and one MSA layer do) for B sequences adding `numNew` tokens each after
 * `ctx` cached ones: the WASM kernels on `k`, and with `js` the float64 JS kernels. GFLOP/s
 * counts 4·Dh per (query head, visible key) and 2·Didx per (index head, scored key).
 */
export function benchAttention(
  k: CpuKernels,
  label: string,
  B: number,
  ctx: number,
  numNew: number,
  js: boolean,
): KernelRow[] {
  const pagesPer = Math.ceil((ctx + numNew) / S);
  const P = B * pagesPer;
  const batch: ForwardBatch = {
    tokenIds: new Int32Array(B * numNew),
    seqs: Array.from({ length: B }, (_, s) => ({
      numCached: ctx,
      numNew,
      pageTable: Int32Array.from({ length: pagesPer }, (_, i) => s * pagesPer + i),
    })),
    pageSize: S,
    logitsFor: 'last',
  };
  const layout = layoutBatch(batch);
  const T = layout.numTokens;
  const q = fill(k.heap.f32(T * H * DH), 1);
  const kc = fill(k.heap.f32(P * S * HKV * DH), 2);
  const vc = fill(k.heap.f32(P * S * HKV * DH), 3);
  const iq = fill(k.heap.f32(T * MSA.numIndexHeads * MSA.indexDim), 4);
  const ik = fill(k.heap.f32(P * S * MSA.indexDim), 5);
  const out = k.heap.f32(T * H * DH);
  const blocks = k.heap.i32(HKV * T * MSA.topk);
  const base = { q, k: kc, v: vc, numHeads: H, numKvHeads: HKV, headDim: DH, scale: 0.125 };
  let flop = 0;
  k.msaSelect(blocks, iq, ik, batch, layout, MSA);
  for (let t = 0; t < T; t++) {
    const pos = layout.positions[t]!;
    flop += 4 * DH * H * (pos + 1); // dense
    if (Math.floor(pos / S) + 1 > MSA.topk)
      flop += 2 * MSA.indexDim * MSA.numIndexHeads * (pos + 1);
    for (let g = 0; g < HKV; g++)
      for (let i = 0; i < MSA.topk; i++) {
        const b = blocks[(g * T + t) * MSA.topk + i]!;
        if (b >= 0) flop += 4 * DH * (H / HKV) * Math.min(S, pos - b * S + 1);
      }
  }
  const what = `B=${B} ctx ${ctx} +${numNew}`;
  const row = (kernel: string, ms: number): KernelRow => ({
    what,
    kernel,
    ms,
    gflops: flop / (ms * 1e6),
    load: loadavg()[0]!,
  });
  const reps = T * ctx > 100_000 ? 5 : 9;
  const rows = [
    row(
      label,
      time(() => {
        k.attention({ ...base, out, blocks: null, topk: 0 }, batch, layout);
        k.msaSelect(blocks, iq, ik, batch, layout, MSA);
        k.attention({ ...base, out, blocks, topk: MSA.topk }, batch, layout);
      }, reps),
    ),
  ];
  if (js)
    rows.push(
      row(
        'js f64',
        time(() => {
          pagedAttention({ ...base, out, blocks: null, topk: 0 }, batch, layout);
          msaSelectBlocks(blocks, iq, ik, batch, layout, MSA);
          pagedAttention({ ...base, out, blocks, topk: MSA.topk }, batch, layout);
        }, 3),
      ),
    );
  for (const a of [q, kc, vc, iq, ik, out, blocks]) k.heap.free(a);
  return rows;
}
