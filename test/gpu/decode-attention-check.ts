/**
 * The tensor-core decode attention kernel (kernels/attention-decode.cu) on random bf16 data,
 * MiniMax-M3 shapes (64 query heads, 4 KV heads: G = 16 rows per tile, Dh 128, page size 128),
 * over shuffled pages, against the CPU backend and the scalar CUDA kernel: a decode batch with
 * contexts at tile edges (0, 62..65, 1,000, 3,000 cached keys), a mixed batch of several new
 * tokens per sequence, MSA-sparse decode with selected blocks (absent ones as -1), and one
 * 20,000-key context (many splits, many tiles per split).
 */
import type { AttentionOptions, Backend } from '../../src/backend/backend.js';
import { attention } from '../../src/backend/cuda/attention-ops.js';
import type { CudaBatchMeta } from '../../src/backend/cuda/batch-meta.js';
import type { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import type { ForwardBatch } from '../../src/backend/forward-batch.js';
import type { Tensor } from '../../src/tensor/tensor.js';
import { countDiff, randArray, relErr, rng, type Row } from './check-util.js';
import { errRow, pagedBatch, worstRow, type SeqSpec } from './paged-attention-util.js';

const H = 64;
const HKV = 4;
const DH = 128;
const S = 128;
const TOPK = 16;
const LIMIT = 1e-2;
const WORST_LIMIT = 3e-2;
const BASE: AttentionOptions = {
  numHeads: H,
  numKvHeads: HKV,
  headDim: DH,
  scale: 1 / Math.sqrt(DH),
  blocks: null,
};

type Spec = SeqSpec;
const batchOf = (spec: Spec, P: number): ForwardBatch =>
  pagedBatch(spec, P, S, 'decode attention check');

/** Per (KV group, token): up to TOPK distinct visible blocks, always the token's own, -1 pads. */
function selectedBlocks(spec: Spec, seed: number): Int32Array {
  const r = rng(seed);
  const pos: number[] = [];
  for (const s of spec) for (let i = 0; i < s.numNew; i++) pos.push(s.numCached + i);
  const out = new Int32Array(HKV * pos.length * TOPK).fill(-1);
  for (let g = 0; g < HKV; g++)
    pos.forEach((p, t) => {
      const visible = Math.floor(p / S) + 1;
      const chosen = new Set([visible - 1]);
      const want = Math.min(TOPK - 2, visible);
      while (chosen.size < want) chosen.add(Math.floor(((r() + 1) / 2) * visible) % visible);
      [...chosen].forEach((b, j) => (out[(g * pos.length + t) * TOPK + j] = b));
    });
  return out;
}

interface Inputs {
  readonly q: Float32Array;
  readonly k: Float32Array;
  readonly v: Float32Array;
  readonly blocks: Int32Array | null;
}

function inputs(T: number, P: number, seed: number, blocks: Int32Array | null): Inputs {
  const n = P * S * HKV * DH;
  return {
    q: randArray(T * H * DH, seed, 4),
    k: randArray(n, seed + 1),
    v: randArray(n, seed + 2),
    blocks,
  };
}

function upload(be: Backend, T: number, P: number, x: Inputs) {
  const t = {
    q: be.upload(x.q, [T, H * DH], 'bf16'),
    k: be.upload(x.k, [P, S, HKV * DH], 'bf16'),
    v: be.upload(x.v, [P, S, HKV * DH], 'bf16'),
    o: be.alloc([T, H * DH], 'bf16'),
  };
  const blocks = x.blocks ? be.upload(x.blocks, [HKV, T, TOPK], 'i32') : null;
  return { t, blocks, opts: { ...BASE, blocks } };
}

function freeAll(be: Backend, ts: readonly (Tensor | null)[]): void {
  for (const t of ts) if (t) be.free(t);
}

function onCpu(cpu: Backend, batch: ForwardBatch, P: number, x: Inputs): Float32Array {
  const T = batch.tokenIds.length;
  const u = upload(cpu, T, P, x);
  cpu.attention(u.t.o, u.t.q, u.t.k, u.t.v, cpu.prepareBatch(batch), u.opts);
  const out = cpu.readF32(u.t.o);
  freeAll(cpu, [...Object.values(u.t), u.blocks]);
  return out;
}

/** The tensor-core kernel (through the Backend) and the scalar one on the same device data. */
function onGpu(gpu: CudaBackend, batch: ForwardBatch, P: number, x: Inputs) {
  const T = batch.tokenIds.length;
  const u = upload(gpu, T, P, x);
  const meta = gpu.prepareBatch(batch) as CudaBatchMeta;
  const ref = gpu.alloc([T, H * DH], 'bf16');
  gpu.attention(u.t.o, u.t.q, u.t.k, u.t.v, meta, u.opts);
  attention(gpu.ctx, ref, u.t.q, u.t.k, u.t.v, meta, u.opts, 'scalar');
  const out = { tc: gpu.readF32(u.t.o), scalar: gpu.readF32(ref) };
  freeAll(gpu, [...Object.values(u.t), u.blocks, ref]);
  return out;
}

const row = (check: string, err: number, limit = LIMIT): Row => errRow(check, err, limit);

export function checkDecodeAttention(cpu: Backend, gpu: CudaBackend): Row[] {
  const rows: Row[] = [];
  const edges = [0, 62, 63, 64, 65, 1000, 3000].map((c) => ({ numCached: c, numNew: 1 }));
  const mixed = [
    { numCached: 200, numNew: 3 },
    { numCached: 0, numNew: 5 },
    { numCached: 127, numNew: 2 },
    { numCached: 700, numNew: 1 },
  ];
  const cases: [string, Spec, number, boolean][] = [
    ['decode, 7 seqs, contexts 1..3,001', edges, 64, false],
    ['mixed: 3/5/2/1 new tokens per seq', mixed, 64, false],
    ['MSA-sparse decode (top-16 blocks, -1 pads)', edges, 64, true],
    ['MSA-sparse mixed batch', mixed, 64, true],
    ['one 20,000-key context', [{ numCached: 19999, numNew: 1 }], 160, false],
  ];
  cases.forEach(([name, spec, P, sparse], i) => {
    const batch = batchOf(spec, P);
    const T = batch.tokenIds.length;
    const x = inputs(T, P, 60 + i, sparse ? selectedBlocks(spec, 70 + i) : null);
    const want = onCpu(cpu, batch, P, x);
    const got = onGpu(gpu, batch, P, x);
    rows.push(row(`decode attention TC vs CPU, ${name}`, relErr(got.tc, want)));
    rows.push(row('  worst (token, head) row', worstRow(got.tc, want, DH), WORST_LIMIT));
    rows.push(row('  scalar CUDA vs CPU (same data)', relErr(got.scalar, want)));
    // Guards against a silent fallback: the two kernels round differently, so some bits differ.
    const differ = countDiff(new Int32Array(got.tc.buffer), new Int32Array(got.scalar.buffer));
    rows.push({
      check: '  the tensor-core kernel ran (bits differ from scalar)',
      value: `${differ}`,
      limit: '>0',
      pass: differ > 0,
    });
  });
  return rows;
}
