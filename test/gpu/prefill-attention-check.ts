/**
 * The tensor-core prefill attention kernels (kernels/attention-prefill.cu's mma.sync, the
 * default, and kernels/attention-prefill-wg.cu's wgmma, 'wgmma') on random bf16 data,
 * MiniMax-M3 shapes (64 query heads, 4 KV heads, Dh 128, page size 128), over shuffled pages:
 * against the CPU backend on a chunked-prefill batch of four sequences (cached context, 64-row
 * tiles spanning sequences, a one-token sequence), and against the scalar CUDA kernel (itself
 * checked against the CPU in op-check.ts) on 2,048-token prefills too large for the CPU here;
 * the kernel's other block shapes (PrefillTiling) on the same batches; MSA-sparse prefill
 * that selects every block taking the dense kernel (and one that does not, the sparse one).
 */
import type { AttentionOptions, Backend } from '../../src/backend/backend.js';
import {
  attention,
  attentionPrefill,
  PREFILL_TOKENS_PER_SEQ,
  type PrefillTiling,
} from '../../src/backend/cuda/attention-ops.js';
import { attentionPrefillWg } from '../../src/backend/cuda/attention-prefill-wg.js';
import type { CudaBatchMeta } from '../../src/backend/cuda/batch-meta.js';
import type { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import type { ForwardBatch } from '../../src/backend/forward-batch.js';
import { countDiff, randArray, relErr, type Row } from './check-util.js';
import {
  errRow,
  pagedBatch,
  runPagedAttention,
  worstRow,
  type PagedInputs,
  type SeqSpec,
} from './paged-attention-util.js';

const H = 64;
const HKV = 4;
const DH = 128;
const S = 128;
const P = 64;
const LIMIT = 1e-2;
const WORST_LIMIT = 3e-2;
const OPTS: AttentionOptions = {
  numHeads: H,
  numKvHeads: HKV,
  headDim: DH,
  scale: 1 / Math.sqrt(DH),
  blocks: null,
};

/** A batch that must route to the tensor-core prefill kernel. */
function batchOf(spec: SeqSpec): ForwardBatch {
  const batch = pagedBatch(spec, P, S, 'prefill attention check');
  if (batch.tokenIds.length < PREFILL_TOKENS_PER_SEQ * spec.length)
    throw new Error('prefill attention check: batch would not route to the tensor-core kernel');
  return batch;
}

/** Random bf16 q and caches; q is large enough (score sd ~1.3) that the softmax is peaked. */
function inputs(T: number, seed: number): { q: Float32Array; k: Float32Array; v: Float32Array } {
  const n = P * S * HKV * DH;
  return {
    q: randArray(T * H * DH, seed, 4),
    k: randArray(n, seed + 1),
    v: randArray(n, seed + 2),
  };
}

const run = (be: Backend, batch: ForwardBatch, x: PagedInputs, blocks: Int32Array | null = null) =>
  runPagedAttention(be, batch, x, OPTS, blocks);

const TOPK = 16;

/**
 * MSA selections [Hkv, T, topk] as msaSelect makes them when a token sees at most topk blocks
 * (all of them, in order, -1 padded); a token past that keeps its last topk blocks.
 */
function allBlocks(batch: ForwardBatch): Int32Array {
  const pos = batch.seqs.flatMap((s) =>
    Array.from({ length: s.numNew }, (_, i) => s.numCached + i),
  );
  const out = new Int32Array(HKV * pos.length * TOPK).fill(-1);
  for (let g = 0; g < HKV; g++)
    pos.forEach((p, t) => {
      const n = Math.floor(p / S) + 1;
      for (let j = 0; j < Math.min(n, TOPK); j++)
        out[(g * pos.length + t) * TOPK + j] = n - Math.min(n, TOPK) + j;
    });
  return out;
}

/**
 * MSA-sparse prefill whose tokens see at most topk blocks runs the dense prefill kernel
 * (attention-ops.ts sparseIsDense): the same bits as dense attention, and the CPU's sparse
 * result within the bound; one token past topk blocks keeps the sparse kernel (bits differ).
 */
function sparseAsDenseRows(cpu: Backend, gpu: CudaBackend): Row[] {
  const dense = batchOf([
    { numCached: 300, numNew: 200 },
    { numCached: 0, numNew: 130 },
    { numCached: 1900, numNew: 147 },
  ]);
  const x = inputs(dense.tokenIds.length, 70);
  const blocks = allBlocks(dense);
  const sparse = run(gpu, dense, x, blocks);
  const same = countDiff(new Int32Array(sparse.buffer), new Int32Array(run(gpu, dense, x).buffer));
  const past = batchOf([{ numCached: 1984, numNew: 128 }]); // positions to 2,111: 17 blocks
  const y = inputs(past.tokenIds.length, 71);
  const pastBlocks = allBlocks(past);
  const pastSparse = run(gpu, past, y, pastBlocks);
  const pastDiffer = countDiff(
    new Int32Array(pastSparse.buffer),
    new Int32Array(run(gpu, past, y).buffer),
  );
  return [
    row(
      'MSA prefill, every block selected (T=477, last position 2,046): TC vs CPU sparse',
      relErr(sparse, run(cpu, dense, x, blocks)),
    ),
    {
      check: '  bits differing from dense attention on the prefill kernel',
      value: `${same}`,
      limit: '0',
      pass: same === 0,
    },
    row(
      'MSA prefill past top-16 (positions to 2,111, last 16 blocks kept): CUDA vs CPU sparse',
      relErr(pastSparse, run(cpu, past, y, pastBlocks)),
    ),
    {
      check: '  the sparse kernel ran (bits differ from dense)',
      value: `${pastDiffer}`,
      limit: '>0',
      pass: pastDiffer > 0,
    },
  ];
}

/**
 * The wgmma kernel's output ('wgmma'), the mma.sync kernel's (the Backend's default) and the
 * scalar kernel's on the same device data.
 */
function runBoth(gpu: CudaBackend, batch: ForwardBatch, x: ReturnType<typeof inputs>) {
  const T = batch.tokenIds.length;
  const meta = gpu.prepareBatch(batch) as CudaBatchMeta;
  const q = gpu.upload(x.q, [T, H * DH], 'bf16');
  const k = gpu.upload(x.k, [P, S, HKV * DH], 'bf16');
  const v = gpu.upload(x.v, [P, S, HKV * DH], 'bf16');
  const o = gpu.alloc([T, H * DH], 'bf16');
  attention(gpu.ctx, o, q, k, v, meta, OPTS, 'wgmma');
  const mma = gpu.readF32(o);
  gpu.attention(o, q, k, v, meta, OPTS);
  const mmaSync = gpu.readF32(o);
  attention(gpu.ctx, o, q, k, v, meta, OPTS, 'scalar');
  const out = { mma, mmaSync, scalar: gpu.readF32(o) };
  for (const t of [q, k, v, o]) gpu.free(t);
  return out;
}

/**
 * The wgmma kernel's V descriptor check: with every key's V row the same vector, the output
 * is that vector whatever the probabilities, so this isolates P.V's reading of V.
 */
function wgVRow(gpu: CudaBackend, batch: ForwardBatch, x: ReturnType<typeof inputs>): Row {
  const T = batch.tokenIds.length;
  const W = HKV * DH;
  const vConst = new Float32Array(x.v.length);
  for (let i = 0; i < vConst.length; i += W) vConst.set(x.v.subarray(0, W), i);
  const meta = gpu.prepareBatch(batch) as CudaBatchMeta;
  const q = gpu.upload(x.q, [T, H * DH], 'bf16');
  const k = gpu.upload(x.k, [P, S, W], 'bf16');
  const v = gpu.upload(vConst, [P, S, W], 'bf16');
  const o = gpu.alloc([T, H * DH], 'bf16');
  const vRow = gpu.readF32(v).subarray(0, W); // the bf16-rounded row
  const want = new Float32Array(T * H * DH);
  for (let t = 0; t < T; t++)
    for (let h = 0; h < H; h++) {
      const g = Math.floor(h / (H / HKV));
      want.set(vRow.subarray(g * DH, g * DH + DH), (t * H + h) * DH);
    }
  attentionPrefillWg(gpu.ctx, o, q, k, v, meta, OPTS);
  const e = relErr(gpu.readF32(o), want);
  for (const t of [q, k, v, o]) gpu.free(t);
  return {
    check: '  wgmma kernel, every V row equal: output = that row',
    value: e.toExponential(2),
    limit: `${LIMIT}`,
    pass: e < LIMIT,
  };
}

/** `gpu` with attention on the wgmma prefill kernel (attention-ops 'wgmma'). */
function wgmmaBackend(gpu: CudaBackend): Backend {
  const attend: Backend['attention'] = (o, q, k, v, meta, opts) =>
    attention(gpu.ctx, o, q, k, v, meta as CudaBatchMeta, opts, 'wgmma');
  return Object.create(gpu, { attention: { value: attend } }) as Backend;
}

/**
 * Random MSA selections [Hkv, T, topk]: each token its own block and up to topk - 1 distinct
 * random earlier ones (-1 padded), so a query tile's rows select different blocks.
 */
function randomBlocks(batch: ForwardBatch, topk: number, seed: number): Int32Array {
  const pos = batch.seqs.flatMap((s) =>
    Array.from({ length: s.numNew }, (_, i) => s.numCached + i),
  );
  const out = new Int32Array(HKV * pos.length * topk).fill(-1);
  let r = seed >>> 0;
  const rnd = (n: number) => (r = (Math.imul(r, 1664525) + 1013904223) >>> 0) % n;
  for (let g = 0; g < HKV; g++)
    pos.forEach((p, t) => {
      const own = Math.floor(p / S);
      const picked = new Set<number>([own]);
      while (picked.size < Math.min(topk, own + 1)) picked.add(rnd(own));
      [...picked].forEach((b, j) => (out[(g * pos.length + t) * topk + j] = b));
    });
  return out;
}

/**
 * MSA-sparse prefill at top-4 of 128-key blocks (contexts of up to 13 blocks, random
 * selections): the wgmma kernel's sparse form and the mma.sync one (the default) against
 * the CPU; a 2,048-token one against each other.
 */
function wgSparseRows(cpu: Backend, gpu: CudaBackend): Row[] {
  const batch = batchOf([
    { numCached: 900, numNew: 100 },
    { numCached: 0, numNew: 300 },
    { numCached: 1500, numNew: 64 },
  ]);
  const x = inputs(batch.tokenIds.length, 80);
  const blocks = randomBlocks(batch, 4, 81);
  const ref = run(cpu, batch, x, blocks);
  const wg = run(wgmmaBackend(gpu), batch, x, blocks);
  const mma = run(gpu, batch, x, blocks);
  const differ = countDiff(new Int32Array(wg.buffer), new Int32Array(mma.buffer));
  const big = batchOf([{ numCached: 0, numNew: 2048 }]);
  const y = inputs(2048, 82);
  const bigBlocks = randomBlocks(big, 4, 83);
  const bigWg = run(wgmmaBackend(gpu), big, y, bigBlocks);
  return [
    row('MSA-sparse prefill, top-4 random (T=464, chunked): wgmma vs CPU', relErr(wg, ref)),
    row('  worst (token, head) row', worst(wg, ref), WORST_LIMIT),
    row('MSA-sparse prefill, same batch: mma.sync vs CPU', relErr(mma, ref)),
    {
      check: '  the wgmma sparse kernel ran (bits differ from mma.sync)',
      value: `${differ}`,
      limit: '>0',
      pass: differ > 0,
    },
    row(
      'MSA-sparse prefill, top-4 random, T=2048: wgmma vs mma.sync',
      relErr(bigWg, run(gpu, big, y, bigBlocks)),
    ),
  ];
}

/** The block shapes other than the bf16 default (1 head per block, 32 rows per warp). */
const OTHER_TILINGS: readonly PrefillTiling[] = [
  { heads: 1, mTiles: 1 },
  { heads: 2, mTiles: 2 },
  { heads: 2, mTiles: 1 },
];

/** The prefill kernel's output with each of OTHER_TILINGS. */
function runTilings(gpu: CudaBackend, batch: ForwardBatch, x: ReturnType<typeof inputs>) {
  const T = batch.tokenIds.length;
  const meta = gpu.prepareBatch(batch) as CudaBatchMeta;
  const q = gpu.upload(x.q, [T, H * DH], 'bf16');
  const k = gpu.upload(x.k, [P, S, HKV * DH], 'bf16');
  const v = gpu.upload(x.v, [P, S, HKV * DH], 'bf16');
  const o = gpu.alloc([T, H * DH], 'bf16');
  const out = OTHER_TILINGS.map((t) => {
    attentionPrefill(gpu.ctx, o, q, k, v, meta, OPTS, t);
    return { name: `${t.heads} head(s)/block, ${16 * t.mTiles} rows/warp`, out: gpu.readF32(o) };
  });
  for (const t of [q, k, v, o]) gpu.free(t);
  return out;
}

const worst = (a: Float32Array, b: Float32Array): number => worstRow(a, b, DH);
const row = (check: string, err: number, limit = LIMIT): Row => errRow(check, err, limit);

export function checkPrefillAttention(cpu: Backend, gpu: CudaBackend): Row[] {
  const rows: Row[] = [];
  // Chunked prefill: cached context, tiles spanning 2-3 sequences, a one-token sequence.
  const chunked = batchOf([
    { numCached: 300, numNew: 200 },
    { numCached: 50, numNew: 1 },
    { numCached: 0, numNew: 130 },
    { numCached: 129, numNew: 70 },
  ]);
  const x = inputs(chunked.tokenIds.length, 40);
  const ref = run(cpu, chunked, x);
  const both = runBoth(gpu, chunked, x);
  rows.push(
    row('prefill attention TC wgmma vs CPU (4 seqs, chunked, T=401)', relErr(both.mma, ref)),
  );
  rows.push(row('  worst (token, head) row', worst(both.mma, ref), WORST_LIMIT));
  rows.push(row('prefill attention mma.sync vs CPU (same batch)', relErr(both.mmaSync, ref)));
  rows.push(row('  worst (token, head) row', worst(both.mmaSync, ref), WORST_LIMIT));
  rows.push(row('prefill attention scalar vs CPU (same batch)', relErr(both.scalar, ref)));
  // The wgmma kernel's sums run in another order than mma.sync's (no silent fallback).
  const wgRan = countDiff(new Int32Array(both.mma.buffer), new Int32Array(both.mmaSync.buffer));
  rows.push({
    check: 'prefill attention: the wgmma kernel ran (bits differ from mma.sync)',
    value: `${wgRan}`,
    limit: '>0',
    pass: wgRan > 0,
  });
  rows.push(wgVRow(gpu, chunked, x));
  // Guards against a silent fallback: the two kernels round differently, so some bits differ.
  const differ = countDiff(new Int32Array(both.mma.buffer), new Int32Array(both.scalar.buffer));
  rows.push({
    check: 'prefill attention: the tensor-core kernel ran (bits differ from scalar)',
    value: `${differ}`,
    limit: '>0',
    pass: differ > 0,
  });
  for (const t of runTilings(gpu, chunked, x)) {
    rows.push(row(`prefill attention TC ${t.name} vs CPU (same batch)`, relErr(t.out, ref)));
    rows.push(row('  worst (token, head) row', worst(t.out, ref), WORST_LIMIT));
  }
  for (const [name, spec] of [
    ['T=2048 one sequence', [{ numCached: 0, numNew: 2048 }]],
    [
      'T=1925 chunked (cached 2048/500/0/37)',
      [
        { numCached: 2048, numNew: 1024 },
        { numCached: 500, numNew: 600 },
        { numCached: 0, numNew: 300 },
        { numCached: 37, numNew: 1 },
      ],
    ],
  ] as const) {
    const b = batchOf(spec);
    const r = runBoth(gpu, b, inputs(b.tokenIds.length, 50));
    rows.push(row(`prefill attention TC (wgmma) vs scalar CUDA, ${name}`, relErr(r.mma, r.scalar)));
    rows.push(row('  worst (token, head) row', worst(r.mma, r.scalar), WORST_LIMIT));
    rows.push(
      row(`prefill attention mma.sync vs scalar CUDA, ${name}`, relErr(r.mmaSync, r.scalar)),
    );
  }
  // The other block shapes on the chunked batch with long cached contexts.
  const long = batchOf([
    { numCached: 2048, numNew: 1024 },
    { numCached: 500, numNew: 600 },
    { numCached: 0, numNew: 300 },
    { numCached: 37, numNew: 1 },
  ]);
  const y = inputs(long.tokenIds.length, 50);
  const base = runBoth(gpu, long, y).scalar;
  for (const t of runTilings(gpu, long, y))
    rows.push(row(`prefill attention TC ${t.name} vs scalar CUDA, T=1925`, relErr(t.out, base)));
  rows.push(...sparseAsDenseRows(cpu, gpu));
  rows.push(...wgSparseRows(cpu, gpu));
  return rows;
}
