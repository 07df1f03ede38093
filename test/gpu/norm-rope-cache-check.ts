/**
 * kernels/norm-rope-cache.cu (the CUDA Backend.normRopeCache) against the separate ops it fuses
 * (normRopeCacheSteps: rmsNorm q and k, RoPE q and k, writeCache K and V) on the same CUDA
 * backend: q, k and both caches equal bit for bit. MiniMax-M3's attention (64 / 4 heads of 128,
 * rotary 64) and index (4 / 1 heads of 128, no values) shapes with bf16 and E4M3 caches, the
 * tiny models' (4 / 2 heads of 16, rotary 8), and float32 mode; a decode batch (positions to
 * 90,000) and a chunked prefill, over shuffled pages.
 */
import type { Backend, NormRopeCacheArgs } from '../../src/backend/backend.js';
import { createCudaBackend, type CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import type { CudaBatchMeta } from '../../src/backend/cuda/batch-meta.js';
import type { CudaTensor } from '../../src/backend/cuda/cuda-tensor.js';
import { normRopeCache as fusedNormRopeCache } from '../../src/backend/cuda/norm-rope-cache.js';
import type { ForwardBatch } from '../../src/backend/forward-batch.js';
import { normRopeCacheSteps } from '../../src/backend/norm-rope-cache-steps.js';
import type { DType } from '../../src/tensor/dtype.js';
import { countDiff, randArray, type Row } from './check-util.js';
import { pagedBatch, type SeqSpec } from './paged-attention-util.js';

const S = 128;
const P = 720;

interface Shape {
  name: string;
  Hq: number;
  Hk: number;
  Dh: number;
  R: number;
  values: boolean;
}

const SHAPES: Shape[] = [
  { name: 'attention 64/4 x 128, rotary 64', Hq: 64, Hk: 4, Dh: 128, R: 64, values: true },
  { name: 'MSA index 4/1 x 128, no values', Hq: 4, Hk: 1, Dh: 128, R: 64, values: false },
  { name: 'tiny 4/2 x 16, rotary 8', Hq: 4, Hk: 2, Dh: 16, R: 8, values: true },
];

const BATCHES: [string, SeqSpec][] = [
  ['decode', [5, 1000, 90_000, 129].map((c) => ({ numCached: c, numNew: 1 }))],
  [
    'chunked prefill',
    [
      { numCached: 0, numNew: 300 },
      { numCached: 700, numNew: 41 },
    ],
  ],
];

/** Raw bits of a tensor (E4M3 codes, bf16 as f32, f32). */
function bits(gpu: CudaBackend, t: CudaTensor): Int32Array {
  if (t.dtype !== 'f8e4m3') return new Int32Array(gpu.readF32(t).buffer);
  const codes = new Uint8Array(t.numel);
  gpu.dev.download(codes, t.ptr);
  return Int32Array.from(codes);
}

/** One run of `how` on fresh copies of the inputs; returns q, k and the caches' bits. */
function run(
  gpu: CudaBackend,
  shape: Shape,
  batch: ForwardBatch,
  cache: DType,
  seed: number,
  how: (a: NormRopeCacheArgs) => void,
): Int32Array[] {
  const T = batch.tokenIds.length;
  const { Hq, Hk, Dh } = shape;
  const act = gpu.storageDtype('bf16');
  const up = (n: number, shp: number[], s: number, a = 3) =>
    gpu.upload(randArray(n, s, a), shp, act);
  const scale = cache === 'f8e4m3' ? [0.037, 0.012] : [1, 1];
  const a: NormRopeCacheArgs = {
    q: up(T * Hq * Dh, [T, Hq * Dh], seed),
    k: up(T * Hk * Dh, [T, Hk * Dh], seed + 1),
    v: shape.values ? up(T * Hk * Dh, [T, Hk * Dh], seed + 2) : null,
    qNorm: up(Dh, [Dh], seed + 3, 0.5),
    kNorm: up(Dh, [Dh], seed + 4, 0.5),
    kCache: gpu.alloc([P, S, Hk * Dh], cache),
    vCache: shape.values ? gpu.alloc([P, S, Hk * Dh], cache) : null,
    numQHeads: Hq,
    numKHeads: Hk,
    headDim: Dh,
    rotaryDim: shape.R,
    theta: 5e6,
    eps: 1e-6,
    kScale: scale[0]!,
    vScale: scale[1]!,
  };
  how(a);
  gpu.synchronize();
  const out = [a.q, a.k, a.kCache, ...(a.vCache ? [a.vCache] : [])].map((t) =>
    bits(gpu, t as CudaTensor),
  );
  [
    a.q,
    a.k,
    a.qNorm,
    a.kNorm,
    a.kCache,
    ...(a.v ? [a.v] : []),
    ...(a.vCache ? [a.vCache] : []),
  ].forEach((t) => gpu.free(t));
  return out;
}

function compare(gpu: CudaBackend, mode: string, caches: DType[]): Row[] {
  const rows: Row[] = [];
  for (const shape of SHAPES)
    for (const cache of caches)
      for (const [bn, spec] of BATCHES) {
        const batch = pagedBatch(spec, P, S, 'norm-rope-cache check');
        const meta = gpu.prepareBatch(batch);
        let ran = true;
        const fused = run(gpu, shape, batch, cache, 7, (a) => {
          ran &&= fusedNormRopeCache(gpu.ctx, a, meta as CudaBatchMeta);
        });
        const steps = run(gpu, shape, batch, cache, 7, (a) => normRopeCacheSteps(gpu, a, meta));
        const differ = fused.reduce((n, f, i) => n + countDiff(f, steps[i]!), 0);
        const total = fused.reduce((n, f) => n + f.length, 0);
        rows.push({
          check: `normRopeCache fused = steps (${mode}, ${shape.name}, ${cache} cache, ${bn}): values differing`,
          value: `${differ}/${total}`,
          limit: '0',
          pass: differ === 0 && ran,
        });
      }
  return rows;
}

export async function checkNormRopeCache(gpu: CudaBackend): Promise<Row[]> {
  const gpu32: Backend & CudaBackend = await createCudaBackend({ float32: true });
  return [...compare(gpu, 'bf16', ['bf16', 'f8e4m3']), ...compare(gpu32, 'f32 mode', ['f32'])];
}
