import type {
  AttentionOptions,
  Backend,
  BatchMeta,
  ExpertWeights,
  MoeOptions,
  MsaOptions,
  NormRopeCacheArgs,
  RopeOptions,
  RouterOptions,
  SharedExpertWeights,
} from '../backend.js';
import { layoutBatch, type BatchLayout, type ForwardBatch } from '../forward-batch.js';
import type { DType } from '../../tensor/dtype.js';
import { w8a8Applies, w8a8Dequantize, w8a8MoeApplies } from '../../tensor/fp8-activation.js';
import type { Fp8Scaling } from '../../tensor/fp8-weight.js';
import { numel, shapeStr, type Shape } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import { Bf16KvCaches } from './bf16-kv-caches.js';
import { CpuTensor, f32, i32 } from './cpu-tensor.js';
import { fillRandomHost } from './fill-random.js';
import { KernelWeights } from './kernel-weights.js';
import { checkCacheScale } from '../kv-scale.js';
import { normRopeCacheSteps } from '../norm-rope-cache-steps.js';
import { fusedNormRopeCache } from './norm-rope-cache.js';
import { writeCacheRows } from './ops/attention.js';
import { moeRows, routerTopKRows, type SharedExpertRows } from './ops/moe.js';
import { ropeNeox, ropeTable, type RopeTable } from './ops/rope.js';
import { CpuKernels, type CpuKernelsOptions } from './wasm/cpu-kernels.js';

export interface CpuBackendOptions extends CpuKernelsOptions {
  /**
   * Fill allocUninitialized tensors with NaN (i32: −2³¹ + 1) instead of leaving old values:
   * for tests that check every such output is written whole before it is read.
   */
  readonly poisonUninitialized?: boolean;
  /**
   * What the KV caches (the tensors allocated as bf16) hold: 'f32' (default: float32, the
   * reference) or 'bf16', rounded on write, attention reading half-width copies (Bf16KvCaches;
   * vLLM's --kv-cache-dtype naming).
   */
  readonly kvCacheDtype?: 'f32' | 'bf16';
}

interface CpuBatchMeta extends BatchMeta {
  readonly layout: BatchLayout;
  /** RoPE cos/sin of the step's positions by "rotaryDim theta", computed at first use. */
  readonly rope: Map<string, RopeTable>;
}

/**
 * The float32 reference backend: every float dtype is stored as float32; the hot kernels run
 * in WASM SIMD with float32 accumulation (float64 JS kernels are their reference and
 * fallback). Every other backend is tested against this one.
 */
export class CpuBackend implements Backend {
  readonly name = 'cpu' as const;
  readonly memory = 'host' as const;
  readonly kernels: CpuKernels;
  private readonly weights: KernelWeights;
  /** The bf16 KV caches (kvCacheDtype 'bf16'), or null. */
  private readonly kv16: Bf16KvCaches | null;

  private readonly poison: boolean;
  /** Weights holding an FP8 weight's dequantized values, by the tensor they lie in. */
  private readonly fp8Values = new WeakMap<CpuTensor, Fp8Scaling>();

  /** `threads`: threads the kernels use, this one included (default 1; `--cpu-threads`). */
  constructor(o: CpuBackendOptions = {}) {
    this.kernels = new CpuKernels(o);
    this.poison = o.poisonUninitialized ?? false;
    this.weights = new KernelWeights(this.kernels.heap);
    this.kv16 = o.kvCacheDtype === 'bf16' ? new Bf16KvCaches(this.kernels) : null;
  }

  /** Ends the kernels' worker threads. */
  close(): void {
    this.kernels.close();
  }

  storageDtype(dtype: DType): DType {
    return dtype === 'i32' ? 'i32' : 'f32';
  }

  alloc(shape: Shape, dtype: DType): Tensor {
    const n = numel(shape);
    const data = dtype === 'i32' ? this.kernels.heap.i32(n) : this.kernels.heap.f32(n);
    this.kernels.zero(data); // recycled scratch blocks hold old values
    return new CpuTensor(shape, dtype, data, true);
  }

  /**
   * Without the zeroing (a WASM memset per tensor, ~80 a decode step): for outputs their op
   * writes whole (StepContext.output), so a recycled block's old values are never read.
   */
  allocUninitialized(shape: Shape, dtype: DType): Tensor {
    const n = numel(shape);
    const data = dtype === 'i32' ? this.kernels.heap.i32(n) : this.kernels.heap.f32(n);
    if (this.poison) data.fill(dtype === 'i32' ? -0x7fffffff : NaN);
    return new CpuTensor(shape, dtype, data, true);
  }

  upload(data: Float32Array | Int32Array, shape: Shape, dtype: DType): Tensor {
    const n = numel(shape);
    const dst = dtype === 'i32' ? this.kernels.heap.i32(n, false) : this.kernels.heap.f32(n, false);
    dst.set(data);
    const t = new CpuTensor(shape, dtype, dst, true);
    this.weights.written(t);
    return t;
  }

  write(dst: Tensor, data: Float32Array | Int32Array): void {
    const d = (dst as CpuTensor).data;
    if (d.length !== data.length)
      throw new Error(`write: ${data.length} values for shape ${shapeStr(dst.shape)}`);
    d.set(data);
    this.weights.written(dst as CpuTensor);
    this.kv16?.written(dst as CpuTensor);
  }

  markDequantizedFp8(t: Tensor, scaling: Fp8Scaling): void {
    const c = t as CpuTensor;
    this.fp8Values.set(c.base ?? c, scaling);
  }

  /** The FP8 scaling whose dequantized values `w` holds (markDequantizedFp8), if any. */
  private fp8Scaling(w: Tensor): Fp8Scaling | undefined {
    const c = w as CpuTensor;
    return this.fp8Values.get(c.base ?? c);
  }

  /** Bytes of tensor memory in use (weights, KV cache, live scratch). */
  get bytesInUse(): number {
    return this.kernels.heap.inUse;
  }

  // A copy by the constructor: slice() of a view of shared memory took twice as long (the
  // decode B=32 logits, 393 KB: 119 against 60 µs).
  readF32(t: Tensor): Float32Array {
    return new Float32Array(f32(t, 'readF32'));
  }

  readI32(t: Tensor): Int32Array {
    return new Int32Array(i32(t, 'readI32'));
  }

  free(t: Tensor): void {
    if (t instanceof CpuTensor && t.owner) {
      this.weights.freed(t);
      this.kv16?.freed(t);
      this.kernels.heap.free(t.data);
    }
  }

  fillRandom(t: Tensor, seed: number, scale: number): void {
    fillRandomHost(f32(t, 'fillRandom'), seed, scale, t.dtype === 'bf16');
    this.weights.written(t as CpuTensor);
    this.kv16?.written(t as CpuTensor);
  }

  view(t: Tensor, shape: Shape): Tensor {
    const c = t as CpuTensor;
    if (numel(shape) !== c.data.length)
      throw new Error(`view: ${shapeStr(t.shape)} cannot be viewed as ${shapeStr(shape)}`);
    return new CpuTensor(shape, t.dtype, c.data, false, c.base ?? c);
  }

  rows(t: Tensor, start: number, count: number): Tensor {
    const c = t as CpuTensor;
    const rowSize = numel(t.shape.slice(1));
    if (start < 0 || start + count > (t.shape[0] ?? 0))
      throw new Error(`rows: [${start}, ${start + count}) outside ${shapeStr(t.shape)}`);
    return new CpuTensor(
      [count, ...t.shape.slice(1)],
      t.dtype,
      c.data.subarray(start * rowSize, (start + count) * rowSize),
      false,
      c.base ?? c,
    );
  }

  prepareBatch(batch: ForwardBatch): BatchMeta {
    const layout = layoutBatch(batch);
    const meta: CpuBatchMeta = {
      batch,
      layout,
      numTokens: layout.numTokens,
      numLogitRows: layout.logitRows.length,
      rope: new Map(),
    };
    return meta;
  }

  embedding(out: Tensor, table: Tensor, meta: BatchMeta): void {
    const [V, D] = table.shape as [number, number];
    const o = f32(out, 'embedding.out', [meta.numTokens, D]);
    const w = f32(table, 'embedding.table');
    meta.batch.tokenIds.forEach((id, t) => {
      if (id < 0 || id >= V)
        throw new Error(`embedding: token id ${id} outside vocabulary of ${V}`);
      o.set(w.subarray(id * D, id * D + D), t * D);
    });
  }

  rmsNorm(out: Tensor, x: Tensor, w: Tensor, eps: number): void {
    const o = f32(out, 'rmsNorm.out', x.shape);
    this.kernels.rmsNorm(o, f32(x, 'rmsNorm.x'), f32(w, 'rmsNorm.w'), eps);
  }

  addRmsNorm(out: Tensor, residual: Tensor, x: Tensor, w: Tensor, eps: number): void {
    const r = f32(residual, 'addRmsNorm.residual', x.shape);
    this.kernels.addRmsNorm(
      f32(out, 'addRmsNorm.out', x.shape),
      r,
      f32(x, 'addRmsNorm.x'),
      f32(w, 'addRmsNorm.w'),
      eps,
    );
  }

  matmul(out: Tensor, x: Tensor, w: Tensor): void {
    const [N, K] = w.shape as [number, number];
    const M = numel(x.shape) / K;
    if (!Number.isInteger(M) || x.shape[x.shape.length - 1] !== K)
      throw new Error(`matmul: x ${shapeStr(x.shape)} does not match w ${shapeStr(w.shape)}`);
    const o = f32(out, 'matmul.out', [M, N]);
    const wk = this.weights.of(w as CpuTensor, f32(w, 'matmul.w'));
    const xv = f32(x, 'matmul.x');
    if (!w8a8Applies(this.fp8Scaling(w), M, N, K)) {
      this.kernels.matmul(o, xv, wk, M, N, K);
      return;
    }
    // W8A8 (tensor/fp8-activation.ts): the GEMM multiplies x's quantized values.
    const q = this.kernels.heap.f32(M * K, false);
    q.set(xv);
    this.kernels.matmul(o, w8a8Dequantize(q, K), wk, M, N, K);
    this.kernels.heap.free(q);
  }

  /** The matmuls in one pool job (one wake and one wait, not one per weight). */
  matmulMany(outs: readonly Tensor[], x: Tensor, ws: readonly Tensor[]): void {
    const K = x.shape[x.shape.length - 1]!;
    const M = numel(x.shape) / K;
    const xv = f32(x, 'matmulMany.x');
    // As matmul one by one: W8A8 weights read x's quantized values (made once for all of them).
    let q: Float32Array | null = null;
    const xFor = (w: Tensor, N: number): Float32Array => {
      if (!w8a8Applies(this.fp8Scaling(w), M, N, K)) return xv;
      if (!q) {
        q = this.kernels.heap.f32(M * K, false);
        q.set(xv);
        w8a8Dequantize(q, K);
      }
      return q;
    };
    const jobs = ws.map((w, i) => {
      const [N, Kw] = w.shape as [number, number];
      if (Kw !== K)
        throw new Error(`matmulMany: x ${shapeStr(x.shape)} does not match w ${shapeStr(w.shape)}`);
      const out = f32(outs[i]!, 'matmulMany.out', [M, N]);
      return {
        out,
        x: xFor(w, N),
        w: this.weights.of(w as CpuTensor, f32(w, 'matmulMany.w')),
        M,
        N,
      };
    });
    this.kernels.matmuls(jobs, 0, K);
    if (q) this.kernels.heap.free(q);
  }

  add(out: Tensor, a: Tensor, b: Tensor): void {
    const o = f32(out, 'add.out', a.shape);
    const av = f32(a, 'add.a');
    const bv = f32(b, 'add.b', a.shape);
    this.kernels.add(o, av, bv, a.shape[a.shape.length - 1] ?? 1);
  }

  rope(x: Tensor, meta: BatchMeta, o: RopeOptions): void {
    const data = f32(x, 'rope.x', [meta.numTokens, o.numHeads * o.headDim]);
    const table = this.ropeTableOf(meta as CpuBatchMeta, o.rotaryDim, o.theta);
    ropeNeox(data, table, o.numHeads, o.headDim, o.rotaryDim);
  }

  /** One kernel job where it applies (norm-rope-cache.ts), else the steps. */
  normRopeCache(a: NormRopeCacheArgs, meta: BatchMeta): void {
    const m = meta as CpuBatchMeta;
    const table = this.ropeTableOf(m, a.rotaryDim, a.theta);
    if (!fusedNormRopeCache(this.kernels, a, meta, m.layout, table)) {
      normRopeCacheSteps(this, a, meta); // its writeCache calls round the rows
      return;
    }
    const width = a.numKHeads * a.headDim;
    for (const c of [a.kCache, a.vCache])
      if (c) this.kv16?.rowsWritten(c as CpuTensor, meta.batch, m.layout, width);
  }

  /** The step's RoPE cos/sin for (rotaryDim, theta), computed at first use. */
  private ropeTableOf(m: CpuBatchMeta, rotaryDim: number, theta: number): RopeTable {
    const key = `${rotaryDim} ${theta}`;
    let table = m.rope.get(key);
    if (!table) {
      table = ropeTable(m.layout.positions, rotaryDim, theta);
      m.rope.set(key, table);
    }
    return table;
  }

  /** An f8e4m3 cache keeps each value's E4M3 round trip (code × scale) in f32. */
  writeCache(cache: Tensor, x: Tensor, meta: BatchMeta, scale = 1): void {
    const width = x.shape[x.shape.length - 1]!;
    const fp8 = cache.dtype === 'f8e4m3';
    checkCacheScale(cache, scale);
    const c = f32(cache, 'writeCache.cache');
    const xv = f32(x, 'writeCache.x', [meta.numTokens, width]);
    const layout = (meta as CpuBatchMeta).layout;
    if (fp8) writeCacheRows(c, xv, layout.slots, width, scale);
    else this.kernels.writeCache(c, xv, meta.batch, layout, width);
    this.kv16?.rowsWritten(cache as CpuTensor, meta.batch, layout, width);
  }

  attention(
    out: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    meta: BatchMeta,
    o: AttentionOptions,
  ): void {
    const T = meta.numTokens;
    const qShape = [T, o.numHeads * o.headDim];
    const topk = o.blocks ? o.blocks.shape[2]! : 0;
    this.kernels.attention(
      {
        out: f32(out, 'attention.out', qShape),
        q: f32(q, 'attention.q', qShape),
        k: f32(k, 'attention.k'),
        v: f32(v, 'attention.v'),
        ...o,
        blocks: o.blocks ? i32(o.blocks, 'attention.blocks', [o.numKvHeads, T, topk]) : null,
        topk,
      },
      meta.batch,
      (meta as CpuBatchMeta).layout,
      this.kv16?.applies(k as CpuTensor) && this.kv16.applies(v as CpuTensor)
        ? { k: this.kv16.copyOf(k as CpuTensor), v: this.kv16.copyOf(v as CpuTensor) }
        : undefined,
    );
  }

  msaSelect(out: Tensor, idxQ: Tensor, idxK: Tensor, meta: BatchMeta, o: MsaOptions): void {
    const T = meta.numTokens;
    this.kernels.msaSelect(
      i32(out, 'msaSelect.out', [o.numIndexHeads, T, o.topk]),
      f32(idxQ, 'msaSelect.idxQ', [T, o.numIndexHeads * o.indexDim]),
      f32(idxK, 'msaSelect.idxK'),
      meta.batch,
      (meta as CpuBatchMeta).layout,
      o,
      this.kv16?.applies(idxK as CpuTensor) ? this.kv16.copyOf(idxK as CpuTensor) : undefined,
    );
  }

  swigluOai(out: Tensor, gateUp: Tensor, alpha: number, limit: number): void {
    const I = out.shape[out.shape.length - 1]!;
    const M = numel(out.shape) / I;
    this.kernels.swiglu(
      f32(out, 'swigluOai.out'),
      f32(gateUp, 'swigluOai.gateUp', [M, 2 * I]),
      I,
      alpha,
      limit,
    );
  }

  routerTopK(
    ids: Tensor,
    weights: Tensor,
    logits: Tensor,
    bias: Tensor | null,
    o: RouterOptions,
  ): void {
    const [T, E] = logits.shape as [number, number];
    const width = o.topK + (o.sharedExpertId === null ? 0 : 1);
    routerTopKRows(
      i32(ids, 'routerTopK.ids', [T, width]),
      f32(weights, 'routerTopK.weights', [T, width]),
      f32(logits, 'routerTopK.logits'),
      bias ? f32(bias, 'routerTopK.bias', [E]) : null,
      E,
      o,
    );
  }

  /**
   * The shared expert joins the routed experts' pool jobs (moeRows), unless its weights hold
   * FP8 values: their matmuls may take W8A8 (quantized x), which CpuBackend.matmul decides.
   */
  moeTakesShared(s: SharedExpertWeights): boolean {
    return this.fp8Scaling(s.gateUp) === undefined && this.fp8Scaling(s.down) === undefined;
  }

  /** A shared expert as moeRows reads it: its weights as the kernels take them. */
  private sharedRows(s: SharedExpertWeights, D: number): SharedExpertRows {
    if (!this.moeTakesShared(s)) throw new Error('moe: a shared expert with FP8 weights');
    const I = s.down.shape[1]!;
    return {
      gateUp: this.weights.of(
        s.gateUp as CpuTensor,
        f32(s.gateUp, 'moe.shared.gateUp', [2 * I, D]),
      ),
      down: this.weights.of(s.down as CpuTensor, f32(s.down, 'moe.shared.down', [D, I])),
      I,
    };
  }

  moe(
    out: Tensor,
    x: Tensor,
    ids: Tensor,
    weights: Tensor,
    experts: ExpertWeights,
    o: MoeOptions,
  ): void {
    const [T, D] = x.shape as [number, number];
    const I = experts.down.shape[2]!;
    const width = ids.shape[1]!;
    const shared = o.shared ? this.sharedRows(o.shared, D) : null;
    const w8a8 = w8a8MoeApplies(
      this.fp8Scaling(experts.gateUp),
      this.fp8Scaling(experts.down),
      T,
      D,
      I,
    );
    moeRows(
      f32(out, 'moe.out', [T, D]),
      f32(x, 'moe.x'),
      i32(ids, 'moe.ids', [T, width]),
      f32(weights, 'moe.weights', [T, width]),
      this.weights.of(
        experts.gateUp as CpuTensor,
        f32(experts.gateUp, 'moe.gateUp', [experts.numLocalExperts, 2 * I, D]),
      ),
      this.weights.of(
        experts.down as CpuTensor,
        f32(experts.down, 'moe.down', [experts.numLocalExperts, D, I]),
      ),
      experts,
      D,
      I,
      o,
      this.kernels,
      w8a8,
      shared,
    );
  }

  gatherLogitRows(out: Tensor, x: Tensor, meta: BatchMeta): void {
    const D = x.shape[1]!;
    const rows = (meta as CpuBatchMeta).layout.logitRows;
    const o = f32(out, 'gatherLogitRows.out', [rows.length, D]);
    const xv = f32(x, 'gatherLogitRows.x');
    rows.forEach((r, i) => o.set(xv.subarray(r * D, r * D + D), i * D));
  }

  synchronize(): void {}
}
