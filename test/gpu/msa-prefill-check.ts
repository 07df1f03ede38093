/**
 * MSA block selection on tensor cores (kernels/msa-score.cu) and sparse attention (the CUDA
 * backend's default bf16 path, kernels/attention-decode.cu) with the
 * model's real sparse shapes (64 query / 4 KV = 4 index heads, Dh 128, index dim 128, block =
 * page 128, top-16, local block forced) over shuffled pages, on a chunked batch long enough
 * that selection drops blocks (contexts up to 10,001 tokens, so sparse ≠ dense):
 * - block ids against the CPU backend, row by row: identical wherever the CPU's scores are not
 *   tied at the selection boundary (the 16th pick and the best block left out differ by more
 *   than TIE), and within a small count elsewhere;
 * - sparse attention over the CPU's blocks against the CPU backend and the scalar CUDA kernel;
 * - an 8,192-token prefill: tensor-core vs scalar CUDA selection (msa.cu), and sparse
 *   attention (default path vs scalar) over the tensor-core selection.
 */
import type { AttentionOptions, Backend, MsaOptions } from '../../src/backend/backend.js';
import { attention } from '../../src/backend/cuda/attention-ops.js';
import type { CudaBatchMeta } from '../../src/backend/cuda/batch-meta.js';
import type { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import { msaSelect, type MsaScoring } from '../../src/backend/cuda/msa-ops.js';
import type { ForwardBatch } from '../../src/backend/forward-batch.js';
import { countDiff, randArray, relErr, type Row } from './check-util.js';

const H = 64;
const HKV = 4;
const DH = 128;
const DI = 128;
const S = 128;
const TOPK = 16;
const P = 200;
/** Score gap (absolute; scores are ~10) below which a boundary counts as tied. */
const TIE = 1e-3;
const MSA: MsaOptions = {
  numIndexHeads: HKV,
  indexDim: DI,
  topk: TOPK,
  initBlocks: 0,
  localBlocks: 1,
};
const OPTS: Omit<AttentionOptions, 'blocks'> = {
  numHeads: H,
  numKvHeads: HKV,
  headDim: DH,
  scale: 1 / Math.sqrt(DH),
};

type Spec = readonly { numCached: number; numNew: number }[];
interface Seq {
  numCached: number;
  numNew: number;
  pageTable: Int32Array;
}

function batchOf(spec: Spec): ForwardBatch & { seqs: Seq[] } {
  let next = 0;
  const seqs = spec.map((s) => {
    const pages = Math.ceil((s.numCached + s.numNew) / S);
    const pageTable = Int32Array.from({ length: pages }, () => (next++ * 37 + 11) % P);
    return { ...s, pageTable };
  });
  if (next > P) throw new Error(`msa prefill check: ${next} pages, only ${P}`);
  const T = spec.reduce((n, s) => n + s.numNew, 0);
  return { tokenIds: new Int32Array(T), seqs, pageSize: S, logitsFor: 'last' };
}

/** Per batch token: (position, page table). */
function tokens(b: ReturnType<typeof batchOf>): { pos: number; pt: Int32Array }[] {
  return b.seqs.flatMap((s) =>
    Array.from({ length: s.numNew }, (_, i) => ({ pos: s.numCached + i, pt: s.pageTable })),
  );
}

/**
 * Rows (index head, token) whose selection boundary is tied in exact arithmetic terms: the
 * lowest-scoring chosen non-forced block and the best block left out within TIE.
 */
function tiedRows(b: ReturnType<typeof batchOf>, iq: Float32Array, ik: Float32Array): Set<number> {
  const tied = new Set<number>();
  const toks = tokens(b);
  const T = toks.length;
  for (let t = 0; t < T; t++) {
    const { pos, pt } = toks[t]!;
    const nb = Math.floor(pos / S) + 1;
    if (nb <= TOPK) continue;
    for (let h = 0; h < HKV; h++) {
      const q = iq.subarray((t * HKV + h) * DI, (t * HKV + h + 1) * DI);
      const sc: number[] = [];
      for (let blk = 0; blk < nb - MSA.localBlocks; blk++) {
        let best = -Infinity;
        for (let j = blk * S; j < Math.min(blk * S + S, pos + 1); j++) {
          const off = (pt[blk]! * S + (j % S)) * DI;
          let d = 0;
          for (let e = 0; e < DI; e++) d += q[e]! * ik[off + e]!;
          best = Math.max(best, d);
        }
        sc.push(best);
      }
      sc.sort((x, y) => y - x);
      const k = TOPK - MSA.localBlocks;
      if (sc[k - 1]! - sc[k]! <= TIE) tied.add(h * T + t);
    }
  }
  return tied;
}

/** Rows (of topk ids) that differ, split by whether the boundary was tied. */
function compareIds(a: Int32Array, b: Int32Array, tied: Set<number>) {
  let untied = 0;
  let inTied = 0;
  for (let r = 0; r < a.length / TOPK; r++) {
    let same = true;
    for (let i = 0; i < TOPK; i++) same &&= a[r * TOPK + i] === b[r * TOPK + i];
    if (same) continue;
    if (tied.has(r)) inTied++;
    else untied++;
  }
  return { untied, inTied };
}

function row(check: string, value: number, limit: number, pass = value <= limit): Row {
  return { check, value: value.toExponential(2), limit: limit.toExponential(0), pass };
}

interface Data {
  q: Float32Array;
  k: Float32Array;
  v: Float32Array;
  iq: Float32Array;
  ik: Float32Array;
}

function inputs(T: number, seed: number): Data {
  return {
    q: randArray(T * H * DH, seed, 2),
    k: randArray(P * S * HKV * DH, seed + 1),
    v: randArray(P * S * HKV * DH, seed + 2),
    iq: randArray(T * HKV * DI, seed + 3),
    ik: randArray(P * S * DI, seed + 4),
  };
}

/** Block ids on the CPU backend. */
function cpuSelect(cpu: Backend, batch: ForwardBatch, x: Data): Int32Array {
  const T = batch.tokenIds.length;
  const meta = cpu.prepareBatch(batch);
  const iq = cpu.upload(x.iq, [T, HKV * DI], 'bf16');
  const ik = cpu.upload(x.ik, [P, S, DI], 'bf16');
  const out = cpu.alloc([HKV, T, TOPK], 'i32');
  cpu.msaSelect(out, iq, ik, meta, MSA);
  const ids = cpu.readI32(out);
  for (const t of [iq, ik, out]) cpu.free(t);
  return ids;
}

/** Block ids on the GPU with the given scoring kernels. */
function gpuSelect(
  gpu: CudaBackend,
  batch: ForwardBatch,
  x: Data,
  scoring: MsaScoring,
): Int32Array {
  const T = batch.tokenIds.length;
  const meta = gpu.prepareBatch(batch) as CudaBatchMeta;
  const iq = gpu.upload(x.iq, [T, HKV * DI], 'bf16');
  const ik = gpu.upload(x.ik, [P, S, DI], 'bf16');
  const out = gpu.alloc([HKV, T, TOPK], 'i32');
  msaSelect(gpu.ctx, out, iq, ik, meta, MSA, scoring);
  const ids = gpu.readI32(out);
  for (const t of [iq, ik, out]) gpu.free(t);
  return ids;
}

/** Sparse attention over the given blocks: on `be`, and (CUDA) also the scalar kernel. */
function sparseOn(
  be: Backend,
  batch: ForwardBatch,
  x: Data,
  ids: Int32Array,
  scalar?: CudaBackend,
) {
  const T = batch.tokenIds.length;
  const meta = be.prepareBatch(batch);
  const q = be.upload(x.q, [T, H * DH], 'bf16');
  const k = be.upload(x.k, [P, S, HKV * DH], 'bf16');
  const v = be.upload(x.v, [P, S, HKV * DH], 'bf16');
  const blocks = be.upload(ids, [HKV, T, TOPK], 'i32');
  const o = be.alloc([T, H * DH], 'bf16');
  be.attention(o, q, k, v, meta, { ...OPTS, blocks });
  const out = be.readF32(o);
  let ref: Float32Array | null = null;
  if (scalar) {
    attention(scalar.ctx, o, q, k, v, meta as CudaBatchMeta, { ...OPTS, blocks }, 'scalar');
    ref = be.readF32(o);
  }
  for (const t of [q, k, v, blocks, o]) be.free(t);
  return { out, ref };
}

export function checkMsaPrefill(cpu: Backend, gpu: CudaBackend): Row[] {
  const rows: Row[] = [];
  const chunked = batchOf([
    { numCached: 8064, numNew: 128 },
    { numCached: 3000, numNew: 200 },
    { numCached: 10000, numNew: 1 },
    { numCached: 0, numNew: 100 },
  ]);
  const T = chunked.tokenIds.length;
  const x = inputs(T, 60);
  const ref = cpuSelect(cpu, chunked, x);
  const got = gpuSelect(gpu, chunked, x, 'tensor-cores');
  const tied = tiedRows(chunked, x.iq, x.ik);
  const d = compareIds(got, ref, tied);
  const label = `(T=${T}, contexts to 10,001, ${tied.size} of ${HKV * T} rows tied)`;
  rows.push(row(`MSA selection TC vs CPU: untied rows differing ${label}`, d.untied, 0));
  rows.push(row('  tied rows differing', d.inTied, tied.size));
  let dropped = 0;
  for (const id of ref) dropped += id < 0 ? 0 : 1;
  const pos = tokens(chunked).map((t) => Math.floor(t.pos / S) + 1);
  const candidates = HKV * pos.reduce((n, nb) => n + nb, 0);
  rows.push({
    check: 'MSA drops blocks in this batch (selected / candidate blocks)',
    value: `${dropped}/${candidates}`,
    limit: '<1',
    pass: dropped < candidates,
  });
  const c = sparseOn(cpu, chunked, x, ref);
  const g = sparseOn(gpu, chunked, x, ref, gpu);
  rows.push(
    row('sparse attention (default bf16 path) vs CPU (same blocks)', relErr(g.out, c.out), 1e-2),
  );
  rows.push(row('sparse attention scalar CUDA vs CPU (same blocks)', relErr(g.ref!, c.out), 1e-2));
  const differ = countDiff(new Int32Array(g.out.buffer), new Int32Array(g.ref!.buffer));
  rows.push({
    check: 'sparse attention: the default path is not the scalar kernel (bits differ)',
    value: `${differ}`,
    limit: '>0',
    pass: differ > 0,
  });
  // A decode batch (one token per sequence: msa-score.cu's one-token blocks), contexts on both
  // sides of top-16 blocks (2,047 and 2,048 tokens: the scores are skipped below).
  const decode = batchOf(
    [1, 100, 129, 2047, 2048, 3000, 5000, 9000].map((c) => ({ numCached: c, numNew: 1 })),
  );
  const xd = inputs(decode.tokenIds.length, 65);
  const tiedD = tiedRows(decode, xd.iq, xd.ik);
  const dd = compareIds(
    gpuSelect(gpu, decode, xd, 'tensor-cores'),
    cpuSelect(cpu, decode, xd),
    tiedD,
  );
  rows.push(
    row(
      `MSA selection TC vs CPU, decode batch (8 sequences, contexts 1..9,001; ${tiedD.size} tied): untied rows differing`,
      dd.untied,
      0,
    ),
  );
  // One 8,192-token prefill: too big for the CPU here; TC against the scalar CUDA kernels.
  const long = batchOf([{ numCached: 0, numNew: 8192 }]);
  const y = inputs(8192, 70);
  const tc = gpuSelect(gpu, long, y, 'tensor-cores');
  const sc = gpuSelect(gpu, long, y, 'scalar');
  const rowsDiff = compareIds(tc, sc, new Set()).untied;
  rows.push(
    row(
      'MSA selection TC vs scalar CUDA, T=8192 (fraction of rows differing)',
      rowsDiff / (HKV * 8192),
      1e-3,
    ),
  );
  const a = sparseOn(gpu, long, y, tc, gpu);
  rows.push(
    row(
      'sparse attention default vs scalar CUDA, T=8192 (TC-selected blocks)',
      relErr(a.out, a.ref!),
      1e-2,
    ),
  );
  return rows;
}
