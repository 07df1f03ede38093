import type { MsaOptions } from '../../backend.js';
import type { BatchLayout, ForwardBatch } from '../../forward-batch.js';
import { pagedAttention, writeCacheRows, type PagedAttentionArgs } from '../ops/attention.js';
import { matmulF32 } from '../ops/matmul.js';
import { swigluOaiRows } from '../ops/moe.js';
import { msaSelectBlocks } from '../ops/msa-select.js';
import type { RopeTable } from '../ops/rope.js';
import { addRmsNormRows, rmsNormRows } from '../ops/norm.js';
import { widenBf16 } from '../cpu-tensor.js';
import { PackedPanels, unpackPanels } from '../packed-panels.js';
import { attentionJob, FLOPS_PER_CACHE_BYTE } from './attention-chunks.js';
import { kernelThresholds, type CpuKernelsOptions } from './cpu-kernels-options.js';
import { fusedMultiplyAdd } from './fused-multiply-add.js';
import type { JobRows } from './job-rows.js';
import { instantiateKernels, KERNEL, KERNEL_EXPORTS } from './kernel-instances.js';
import { matmulChunks, type MatmulJob } from './matmul-chunks.js';
import { msaJob, msaPick } from './msa-chunks.js';
import type { NormRopeRows } from './norm-rope-rows.js';
import { HeapRopeTable } from './heap-rope-table.js';
import { HeapScratch, StepTables } from './step-tables.js';
import { ThreadMode } from './thread-mode.js';
import { MAX_CHUNKS, ThreadPool } from './thread-pool.js';
import { WasmHeap } from './wasm-heap.js';

export type { CpuKernelsOptions } from './cpu-kernels-options.js';
export type { NormRopeRows } from './norm-rope-rows.js';

const CHUNKS_PER_THREAD = 4;

/**
 * The CPU backend's memory and hot kernels. matmul, attention and MSA selection run the WASM
 * SIMD kernels (matmul.wat, attention.wat) when all operands live in the heap and the widths
 * suit 4-lane vectors, else the float64 JS kernels (the reference they are tested against).
 *
 * With `threads` > 1 large kernels are cut into a few chunks per thread that a pool of worker
 * threads sharing the heap claims: matmul by output columns (or rows when there are few
 * columns), attention by (token, KV group), MSA selection by token (all its index heads). Each output
 * element is computed by exactly one chunk, by the same code in the same order as on one
 * thread, so results are bit-identical whatever the thread count (tested).
 */
export class CpuKernels {
  readonly heap = new WasmHeap();
  readonly threads: number;
  /** Whether the packed matmul and attention fuse multiply-add (CpuKernelsOptions.fma). */
  readonly fma: boolean;
  private readonly pool: ThreadPool;
  private readonly tables = new StepTables(this.heap);
  private readonly rope = new HeapRopeTable(this.heap);
  private readonly scratch: HeapScratch[];
  /** Block scores [T, Hi, max blocks] of a selection split by key ranges. */
  private readonly msaScores = new HeapScratch(this.heap);
  private readonly minParallelFlops: number;
  private readonly minWakeFlops: number;
  private readonly touchMinBytes: number;
  private readonly zeroFn: (p: number, bytes: number) => void;
  private readonly mode: ThreadMode;

  constructor(o: CpuKernelsOptions = {}) {
    const t = kernelThresholds(o);
    this.threads = t.threads;
    this.minParallelFlops = t.minParallelFlops;
    this.minWakeFlops = t.minWakeFlops;
    this.touchMinBytes = t.touchMinBytes;
    this.mode = new ThreadMode(t.adaptive);
    if (o.fma && !fusedMultiplyAdd())
      throw new Error('CPU kernels: fma requested, but this runtime has no fused relaxed_madd');
    this.fma = o.fma ?? fusedMultiplyAdd();
    const k = instantiateKernels(this.heap.memory, this.fma);
    this.zeroFn = k.zero;
    this.pool = new ThreadPool(t.threads, this.heap.memory, k.modules, KERNEL_EXPORTS, k.fns);
    // one scratch block per chunk: chunks of a job run concurrently, on any thread
    this.scratch = Array.from(
      { length: Math.min(CHUNKS_PER_THREAD * t.threads, MAX_CHUNKS) },
      () => new HeapScratch(this.heap),
    );
  }

  /** Ends the worker threads (the kernels then run on the caller only). */
  close(): void {
    this.pool.close();
  }

  /**
   * out[M, N] = x[M, K] · w[N, K]^T; w float32 or bf16 bits (widened in the kernel), row-major
   * or packed in panels (PackedPanels: the register-blocked kernel, sequential sums over k).
   */
  matmul(
    out: Float32Array,
    x: Float32Array,
    w: Float32Array | Uint16Array | PackedPanels,
    M: number,
    N: number,
    K: number,
  ): void {
    this.matmuls([{ out, x, w, M }], N, K);
  }

  /**
   * Several matmuls (the experts of a MoE layer, all [N, K]; projections of one input, each
   * its own `j.N`; a shared expert beside the routed ones, its own `j.K`) in one pool job:
   * each is cut into chunks as its share of the job's flops asks, so threads work on
   * different matmuls at once. Every output is what `matmul` alone computes.
   */
  matmuls(list: readonly MatmulJob[], N: number, K: number): void {
    const h = this.heap;
    const wasmOk = (j: MatmulJob, k: number): boolean =>
      k % 4 === 0 &&
      h.owns(j.out) &&
      h.owns(j.x) &&
      h.owns(j.w instanceof PackedPanels ? j.w.data : j.w);
    const flops = list.reduce((a, j) => a + 2 * j.M * (j.N ?? N) * (j.K ?? K), 0);
    const total = this.chunksFor(flops);
    const job = this.pool.job();
    for (const j of list) {
      const [n, k] = [j.N ?? N, j.K ?? K];
      if (j.M === 0) continue;
      if (!wasmOk(j, k)) {
        const wf = j.w instanceof PackedPanels ? unpackPanels(j.w, n, k) : j.w;
        matmulF32(j.out, j.x, wf instanceof Uint16Array ? widenBf16(wf) : wf, j.M, n, k);
        continue;
      }
      const share = Math.max(1, Math.round((total * 2 * j.M * n * k) / Math.max(1, flops)));
      matmulChunks(job, j, n, k, share);
    }
    this.run(job, flops);
  }

  /**
   * a = 0, on the caller: a memset in WASM where `a` lies in the heap (TypedArray.fill takes
   * V8's element-by-element path on shared memory, ~20× slower).
   */
  zero(a: Float32Array | Int32Array): void {
    if (this.heap.owns(a)) this.zeroFn(a.byteOffset, a.byteLength);
    else a.fill(0);
  }

  /** cache row slots[t] = x row t (rows of `width` values): the KV cache write, on the caller. */
  writeCache(
    cache: Float32Array,
    x: Float32Array,
    batch: ForwardBatch,
    layout: BatchLayout,
    width: number,
  ): void {
    if (!this.rowsInHeap([cache, x], width)) return writeCacheRows(cache, x, layout.slots, width);
    this.tables.fill(batch, layout);
    const job = this.pool.job();
    job.add(
      KERNEL.scatter_rows,
      cache.byteOffset,
      x.byteOffset,
      this.tables.slotsPtr,
      layout.numTokens,
      4 * width,
    );
    this.pool.run(job, false);
  }

  /**
   * Per-head q/k RMSNorm, then RoPE (`rope`: the step's table), then k (and v) into cache row
   * slots[t], every token in one job (rowops.wat norm_rope_cache): the values rmsNorm,
   * ropeNeox and writeCache give in turn. False (nothing done) where the kernel does not
   * apply: an operand outside the heap, heads not of whole vectors, rotaryDim/2 odd.
   */
  normRopeCache(
    a: NormRopeRows,
    batch: ForwardBatch,
    layout: BatchLayout,
    rope: RopeTable,
  ): boolean {
    const { headDim: Dh, numQHeads: Hq, numKHeads: Hk } = a;
    const half = a.rotaryDim / 2;
    const operands = [
      a.q,
      a.k,
      a.qNorm,
      a.kNorm,
      a.kCache,
      ...(a.v && a.vCache ? [a.v, a.vCache] : []),
    ];
    if (!this.rowsInHeap(operands, Dh) || half % 2 !== 0 || a.rotaryDim > Dh) return false;
    this.tables.fill(batch, layout);
    const [cos, sin] = this.rope.of(rope);
    const [q, k, v] = [a.q.byteOffset, a.k.byteOffset, a.v ? a.v.byteOffset : 0];
    const [qw, kw, kc] = [a.qNorm.byteOffset, a.kNorm.byteOffset, a.kCache.byteOffset];
    const vc = a.vCache ? a.vCache.byteOffset : 0;
    const slots = this.tables.slotsPtr;
    // per element of a head: the norm's ~5 flops, RoPE's ~3; the cache rows' copies
    const perToken = 8 * (Hq + Hk) * Dh + 2 * Hk * Dh;
    // prettier-ignore
    this.byRows(layout.numTokens, perToken, (job, t0, t1) =>
      job.add(KERNEL.norm_rope_cache, q, k, v, qw, kw, kc, vc, slots, cos, sin, t0, t1, Hq, Hk, Dh, half, a.eps));
    return true;
  }

  /**
   * Cache rows slots[t] of `data` rounded to bf16 in place, their bits also into `copy` when
   * given (bf16-rows.wat), on the caller. False (nothing done) where an operand is outside
   * the heap or rows are not of whole vectors.
   */
  roundBf16Rows(
    data: Float32Array,
    copy: Uint16Array | null,
    batch: ForwardBatch,
    layout: BatchLayout,
    width: number,
  ): boolean {
    if (!this.rowsInHeap([data], width) || (copy && !this.heap.owns(copy))) return false;
    this.tables.fill(batch, layout);
    const [d, c, n] = [data.byteOffset, copy ? copy.byteOffset : 0, layout.numTokens];
    const job = this.pool.job();
    job.add(KERNEL.round_bf16_rows, d, c, this.tables.slotsPtr, n, 4 * width);
    this.pool.run(job, false);
    return true;
  }

  /** dst row i = src row rows[i] (rows of `width` values), on the caller. */
  gatherRows(dst: Float32Array, src: Float32Array, rows: Int32Array, width: number): void {
    if (!this.rowsInHeap([dst, src], width) || !this.heap.owns(rows)) {
      rows.forEach((r, i) => dst.set(src.subarray(r * width, r * width + width), i * width));
      return;
    }
    const job = this.pool.job();
    job.add(
      KERNEL.gather_rows,
      dst.byteOffset,
      src.byteOffset,
      rows.byteOffset,
      rows.length,
      4 * width,
    );
    this.pool.run(job, false);
  }

  /**
   * out row rows[i] += w[i] · y row i for i in order, each update in float64 rounded once to
   * float32 (the same bits in WASM and JS), on the caller (entries of a token stay in order).
   */
  scatterAdd(
    out: Float32Array,
    y: Float32Array,
    rows: Int32Array,
    w: Float32Array,
    width: number,
  ): void {
    const inHeap = this.rowsInHeap([out, y, w], width) && this.heap.owns(rows);
    if (!inHeap || width % 2 !== 0) {
      rows.forEach((r, i) => {
        for (let d = 0; d < width; d++)
          out[r * width + d] = out[r * width + d]! + w[i]! * y[i * width + d]!;
      });
      return;
    }
    const job = this.pool.job();
    // prettier-ignore
    job.add(KERNEL.scatter_add, out.byteOffset, y.byteOffset, rows.byteOffset, w.byteOffset, rows.length, 4 * width);
    this.pool.run(job, false);
  }

  /**
   * Paged causal GQA attention (dense, or over `a.blocks`); see Backend.attention. `kv16`:
   * half-width copies of a.k and a.v (Bf16KvCaches) that the WASM kernel reads instead.
   */
  attention(
    a: PagedAttentionArgs,
    batch: ForwardBatch,
    layout: BatchLayout,
    kv16?: { readonly k: Uint16Array; readonly v: Uint16Array },
  ): void {
    const h = this.heap;
    const inHeap = [a.out, a.q, a.k, a.v].every((x) => h.owns(x));
    if (a.headDim % 16 !== 0 || !inHeap || (a.blocks !== null && !h.owns(a.blocks))) {
      pagedAttention(a, batch, layout);
      return;
    }
    this.tables.fill(batch, layout);
    const job = this.pool.job();
    const work = attentionJob(job, a, batch, layout, {
      tables: this.tables,
      scratch: this.scratch,
      chunksFor: (w) => this.chunksFor(w),
      touchMinBytes: this.touchMinBytes,
      kv16: kv16 && h.owns(kv16.k) && h.owns(kv16.v) ? kv16 : null,
    });
    this.run(job, work);
  }

  /**
   * MSA block selection; see Backend.msaSelect. `idxK16`: a half-width copy of idxK
   * (Bf16KvCaches) that the WASM kernel reads instead.
   */
  msaSelect(
    out: Int32Array,
    idxQ: Float32Array,
    idxK: Float32Array,
    batch: ForwardBatch,
    layout: BatchLayout,
    o: MsaOptions,
    idxK16?: Uint16Array,
  ): void {
    const h = this.heap;
    if (o.indexDim % 4 !== 0 || !h.owns(idxQ) || !h.owns(idxK) || !h.owns(out)) {
      msaSelectBlocks(out, idxQ, idxK, batch, layout, o);
      return;
    }
    this.tables.fill(batch, layout);
    const T = layout.numTokens;
    const maxPos = this.tables.maxPos;
    // flops, plus the index keys each token reads (once for all its heads)
    const keys = T * (maxPos + 1);
    const work = (2 * o.numIndexHeads + FLOPS_PER_CACHE_BYTE * 4) * o.indexDim * keys;
    const k16 = idxK16 && h.owns(idxK16) ? idxK16 : null;
    // prettier-ignore
    const j = { out: out.byteOffset, q: idxQ.byteOffset, k: (k16 ?? idxK).byteOffset,
      meta: this.tables.metaPtr, T, S: batch.pageSize, maxPos, o, kv16: k16 !== null };
    const first = this.pool.job();
    const split = msaJob(first, j, this.chunksFor(work), this.scratch, this.msaScores);
    this.run(first, work);
    if (!split) return;
    const job = this.pool.job(); // one msa_pick, on the caller
    msaPick(job, j, split, this.scratch);
    this.run(job, 0);
  }

  /** Gemma RMSNorm over rows of w.length (out may be x); see Backend.rmsNorm. */
  rmsNorm(out: Float32Array, x: Float32Array, w: Float32Array, eps: number): void {
    const n = w.length;
    if (!this.rowsInHeap([out, x, w], n)) return rmsNormRows(out, x, w, eps);
    const [o, xp, wp] = [out.byteOffset, x.byteOffset, w.byteOffset];
    this.byRows(x.length / n, 4 * n, (job, r0, r1) =>
      job.add(KERNEL.rms_norm, o, xp, wp, r0, r1, n, eps),
    );
  }

  /** residual += x, then out = RMSNorm(residual); see Backend.addRmsNorm. */
  addRmsNorm(
    out: Float32Array,
    residual: Float32Array,
    x: Float32Array,
    w: Float32Array,
    eps: number,
  ): void {
    const n = w.length;
    if (!this.rowsInHeap([out, residual, x, w], n)) return addRmsNormRows(out, residual, x, w, eps);
    const [o, rp, xp, wp] = [out.byteOffset, residual.byteOffset, x.byteOffset, w.byteOffset];
    // prettier-ignore
    this.byRows(x.length / n, 5 * n, (job, r0, r1) => job.add(KERNEL.add_rms_norm, o, rp, xp, wp, r0, r1, n, eps));
  }

  /** out = a + b, elementwise over rows of `width` values. */
  add(out: Float32Array, a: Float32Array, b: Float32Array, width: number): void {
    if (!this.rowsInHeap([out, a, b], width)) {
      for (let i = 0; i < out.length; i++) out[i] = a[i]! + b[i]!;
      return;
    }
    const [o, ap, bp] = [out.byteOffset, a.byteOffset, b.byteOffset];
    this.byRows(a.length / width, width, (job, r0, r1) =>
      job.add(KERNEL.add, o, ap, bp, r0, r1, width),
    );
  }

  /** SwiGLU-OAI, gu [M, 2I] → out [M, I]; see Backend.swigluOai. */
  swiglu(out: Float32Array, gu: Float32Array, I: number, alpha: number, limit: number): void {
    if (!this.rowsInHeap([out, gu], I)) return swigluOaiRows(out, gu, I, alpha, limit);
    const [o, g] = [out.byteOffset, gu.byteOffset];
    // an exp and a division an element: measured ~4 ns (~200 flops of matmul time), counted 100
    // prettier-ignore
    this.byRows(out.length / I, 100 * I, (job, r0, r1) => job.add(KERNEL.swiglu, o, g, r0, r1, I, alpha, limit));
  }

  /** Whether the row kernels can run: all operands in the heap, rows of whole vectors. */
  private rowsInHeap(arrays: readonly Float32Array[], width: number): boolean {
    return width % 4 === 0 && arrays.every((a) => this.heap.owns(a));
  }

  /** One row kernel over `rows` rows, cut into chunks of consecutive rows (`add`s a chunk). */
  private byRows(
    rows: number,
    flopsPerRow: number,
    add: (job: JobRows, r0: number, r1: number) => void,
  ): void {
    const flops = rows * flopsPerRow;
    const n = Math.min(rows, this.chunksFor(flops));
    const chunk = Math.ceil(rows / Math.max(1, n));
    const job = this.pool.job();
    for (let r0 = 0; r0 < rows; r0 += chunk) add(job, r0, Math.min(rows, r0 + chunk));
    this.run(job, flops);
  }

  /**
   * One pool job of `flops`: from minWakeFlops it runs threaded (waking sleeping workers) or
   * on the caller as ThreadMode chooses, and is timed for it; a smaller one runs on the caller
   * even when workers are awake (a worker spinning after a large job would otherwise take
   * every small job posted within its spin window, a handoff each).
   */
  private run(job: JobRows, flops: number): void {
    if (job.length <= 1 || this.threads === 1) return this.pool.run(job, false);
    if (flops < this.minWakeFlops) return this.pool.run(job, false, true);
    const threaded = this.mode.threaded;
    const t0 = performance.now();
    this.pool.run(job, threaded, !threaded);
    this.mode.record(flops, performance.now() - t0);
  }

  /**
   * Chunks to cut a kernel of this many flops into: 1 below minParallelFlops, else a few per
   * thread, so that the others take over the share of a thread the OS has descheduled.
   */
  private chunksFor(flops: number): number {
    if (this.threads === 1 || flops < this.minParallelFlops) return 1;
    return Math.min(CHUNKS_PER_THREAD * this.threads, MAX_CHUNKS);
  }
}
