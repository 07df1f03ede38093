/**
 * The CUDA backend: bf16 (or f32) tensors in device memory, kernels from kernels/*.cu compiled
 * by NVRTC, GEMMs on cuBLAS, one stream. Every op only enqueues work (no host reads), so a
 * decode step can be captured into a CUDA graph (decode-graphs.ts; a host read while capturing
 * throws). Created with
 * `createCudaBackend()`; on a machine without a usable GPU that throws one clear line.
 */
import type {
  AttentionOptions,
  Backend,
  Fp8WeightOps,
  BatchMeta,
  ExpertWeights,
  MoeOptions,
  MsaOptions,
  NormRopeCacheArgs,
  RopeOptions,
  RouterOptions,
  KvShape,
} from '../backend.js';
import { decodeAttentionFits } from './attention-decode.js';
import type { ForwardBatch } from '../forward-batch.js';
import { DTYPE_BYTES, type DType } from '../../tensor/dtype.js';
import { numel, shapeStr, type Shape } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import { attention, type PrefillAttention } from './attention-ops.js';
import { msaSelect, type MsaScoring } from './msa-ops.js';
import { BatchMetaStore, type CudaBatchMeta } from './batch-meta.js';
import { CublasGemm } from './cublas-gemm.js';
import { cuda, CudaTensor } from './cuda-tensor.js';
import { DeviceAllocator } from './device-allocator.js';
import { HostTransfer } from './host-transfer.js';
import { CudaDevice, fmtBytes, type CudaGraph } from './device.js';
import * as ew from './elementwise-ops.js';
import { loadCudaLibs } from './ffi.js';
import { Checker } from './check.js';
import { KernelCache } from './kernel-cache.js';
import { kernelTuning, type KernelTuning } from './kernel-tuning.js';
import { matmulMany } from './matmul-many.js';
import { matmul, matmulRowInvariantFrom } from './matmul-ops.js';
import { freeLtScales } from './fp8-w8a8.js';
import { moe, routerTopK } from './moe-ops.js';
import { moeCapturable } from './moe-fp8.js';
import { normRopeCache as fusedNormRopeCache } from './norm-rope-cache.js';
import { normRopeCacheSteps } from '../norm-rope-cache-steps.js';
import type { OpContext } from './op-context.js';
import { Workspace } from './workspace.js';
import { readEnv } from '../../config/env.js';
import type { WeightUploader, WeightUploaderOptions } from '../weight-uploader.js';
import { CudaWeightUploader } from './cuda-weight-uploader.js';
import { CudaFp8Weight } from './cuda-fp8-weight.js';
import { CudaFp8WeightOps } from './cuda-fp8-weights.js';
import { allocSplitF32Weight, resplit, SplitF32Weight } from './split-f32-weight.js';

export interface CudaBackendOptions {
  readonly deviceOrdinal?: number;
  /** Measured kernel choices (kernel-tuning.ts); default DEFAULT_TUNING. */
  readonly tuning?: Partial<KernelTuning>;
  /** Told when a kernel compile (NVRTC, blocking) starts and ends (KernelCache's onCompile). */
  readonly onCompile?: (compiling: boolean) => void;
  /** Capacity of the per-step metadata buffer, in int32 entries (default 4 Mi). */
  readonly maxMetaInts?: number;
  /**
   * Store every bf16 request as f32 (a float32 backend, like the CPU reference): for exact
   * checks against the golden cases. Default false (bf16 weights and activations).
   */
  readonly float32?: boolean;
  /**
   * Kernel for bf16 dense prefill attention (default 'tensor-cores'; 'scalar' keeps the CUDA-core
   * flash kernel that f32, decode and MSA-sparse attention always use), for comparisons.
   */
  readonly prefillAttention?: PrefillAttention;
  /**
   * Keep FP8 checkpoint weights (and `--quantization fp8`) in FP8 with their scales (default
   * true; never in float32 mode). False dequantizes them at load to bf16, for comparisons.
   */
  readonly fp8Weights?: boolean;
  /**
   * MSA block scoring for bf16: 'tensor-cores' (default: kernels/msa-score.cu, checked against
   * the CPU in `gpu-check --only msa`) or 'scalar' (kernels/msa.cu, which f32 always uses), for
   * comparisons.
   */
  readonly msaScoring?: MsaScoring;
}

export class CudaBackend implements Backend {
  readonly name = 'cuda' as const;
  readonly memory = 'cuda' as const;
  readonly ctx: OpContext;
  readonly gemm: CublasGemm;
  readonly metaStore: BatchMetaStore;
  private readonly allocator: DeviceAllocator;
  private readonly transfer: HostTransfer;
  private readonly float32: boolean;
  private readonly prefillAttention: PrefillAttention;
  /** FP8 weights stay FP8 (W8A16 kernels); not in float32 mode, whose checks are exact. */
  readonly fp8?: Fp8WeightOps;
  private readonly msaScoring: MsaScoring;

  constructor(
    readonly dev: CudaDevice,
    o: CudaBackendOptions = {},
  ) {
    this.ctx = {
      dev,
      kernels: new KernelCache(dev, undefined, undefined, o.onCompile),
      ws: new Workspace(dev),
      tuning: kernelTuning(o.tuning),
    };
    this.gemm = new CublasGemm(dev);
    this.allocator = new DeviceAllocator(dev);
    this.transfer = new HostTransfer(this.ctx, (t, start, count) => {
      const K = t.shape[t.shape.length - 1]!;
      const flat = this.view(t, [t.numel / K, K]);
      return this.rows(flat, start, count) as CudaFp8Weight;
    });
    this.metaStore = new BatchMetaStore(dev, o.maxMetaInts ?? 4 * 2 ** 20);
    this.float32 = o.float32 ?? false;
    this.prefillAttention = o.prefillAttention ?? 'tensor-cores';
    if (!this.float32 && o.fp8Weights !== false)
      this.fp8 = new CudaFp8WeightOps(this.ctx, (s, d) => this.allocRaw(s, d));
    this.msaScoring = o.msaScoring ?? 'tensor-cores';
  }

  /** The dtype actually stored for a requested one. */
  private storage(dtype: DType): DType {
    return this.float32 && dtype === 'bf16' ? 'f32' : dtype;
  }

  storageDtype(dtype: DType): DType {
    return this.storage(dtype);
  }

  get cudaStream(): unknown {
    return this.dev.stream;
  }

  // ------------------------------------------------------------------ memory

  alloc(shape: Shape, dtype: DType): Tensor {
    const t = this.allocRaw(shape, dtype);
    this.dev.memsetAsync(t.ptr, 0, t.bytes);
    return t;
  }

  /**
   * No memset: a prefill's per-layer outputs (q, attention, the MLP's gate|up and activations)
   * are GBs per forward at 8k tokens, about 1 ms of memset bandwidth, and a memset node each in
   * decode graphs.
   */
  allocUninitialized(shape: Shape, dtype: DType): Tensor {
    return this.allocRaw(shape, dtype);
  }

  private allocRaw(shape: Shape, requested: DType): CudaTensor {
    return this.allocator.alloc(shape, this.storage(requested));
  }

  /**
   * A SplitF32Weight (values and bf16x3 parts zeroed): the router's prefill GEMM then runs on
   * the bf16 tensor cores (matmul-bf16x3.ts). In float32 mode a plain f32 tensor: x is f32
   * there, so the parts' products would not be exact.
   */
  allocF32Weight(shape: Shape): Tensor {
    if (this.float32) return this.alloc(shape, 'f32');
    const w = allocSplitF32Weight((s, d) => this.allocRaw(s, d), shape);
    this.dev.memsetAsync(w.ptr, 0, w.bytes);
    this.dev.memsetAsync(w.partsPtr, 0, w.partsOwner!.bytes);
    return w;
  }

  upload(data: Float32Array | Int32Array, shape: Shape, dtype: DType): Tensor {
    const n = numel(shape);
    if (data.length !== n)
      throw new Error(`upload: ${data.length} values for shape ${shapeStr(shape)}`);
    const t = this.allocRaw(shape, dtype);
    this.write(t, data);
    return t;
  }

  write(dst: Tensor, data: Float32Array | Int32Array): void {
    this.transfer.write(dst, data);
    if (dst instanceof SplitF32Weight) resplit(this.ctx, dst);
  }

  readF32(t: Tensor): Float32Array {
    return this.transfer.readF32(t);
  }

  readI32(t: Tensor): Int32Array {
    return this.transfer.readI32(t);
  }

  free(t: Tensor): void {
    if (t instanceof CudaFp8Weight) {
      this.free(t.scales);
      freeLtScales(this.dev, t);
    }
    if (t instanceof SplitF32Weight && t.partsOwner) this.allocator.free(t.partsOwner);
    this.allocator.free(cuda(t, 'free'));
  }

  view(t: Tensor, shape: Shape): Tensor {
    const c = cuda(t, 'view');
    if (numel(shape) !== c.numel)
      throw new Error(`view: ${shapeStr(t.shape)} cannot be viewed as ${shapeStr(shape)}`);
    if (c instanceof CudaFp8Weight) {
      const K = c.shape[c.shape.length - 1]!;
      if (shape[shape.length - 1] !== K || shape.length < 2)
        throw new Error(`view: an FP8 weight ${shapeStr(t.shape)} keeps its rows of ${K}`);
      const scales = this.view(c.scales, [...shape.slice(0, -1), c.scales.shape.at(-1)!]);
      return new CudaFp8Weight(shape, c.ptr, null, cuda(scales, 'view'), c.scaling);
    }
    if (c instanceof SplitF32Weight) return c.reshaped(shape);
    return new CudaTensor(shape, c.dtype, c.ptr, null);
  }

  rows(t: Tensor, start: number, count: number): Tensor {
    const c = cuda(t, 'rows');
    const rowElems = numel(t.shape.slice(1));
    if (start < 0 || start + count > (t.shape[0] ?? 0))
      throw new Error(`rows: [${start}, ${start + count}) outside ${shapeStr(t.shape)}`);
    const ptr = c.ptr + start * rowElems * DTYPE_BYTES[c.dtype];
    if (c instanceof CudaFp8Weight) {
      const scales = cuda(this.rows(c.scales, start, count), 'rows');
      return new CudaFp8Weight([count, ...t.shape.slice(1)], ptr, null, scales, c.scaling);
    }
    if (c instanceof SplitF32Weight) return c.rowRange(start, count);
    return new CudaTensor([count, ...t.shape.slice(1)], c.dtype, ptr, null);
  }

  /** Free and total device memory in bytes (for sizing the KV cache). */
  checkKvCacheDtype(dtype: DType, o: KvShape): void {
    if (dtype !== 'f8e4m3') return;
    const why = this.float32
      ? 'the CUDA f32 mode reads bf16/f32 caches only'
      : this.prefillAttention === 'scalar'
        ? 'scalar attention (prefillAttention) reads bf16/f32 caches only'
        : decodeAttentionFits('bf16', o)
          ? null
          : `the tensor-core attention kernels need head_dim a multiple of 16 up to 128 and a GQA group of at most 16 (head_dim ${o.headDim}, group ${o.numHeads / o.numKvHeads})`;
    if (why) throw new Error(`--kv-cache-dtype fp8: ${why}`);
  }

  memoryInfo(): { free: number; total: number; pool: number; workspace: number } {
    return {
      ...this.dev.memInfo(),
      pool: this.allocator.pooledBytes,
      workspace: this.ctx.ws.totalBytes,
    };
  }

  // ------------------------------------------------------------------ steps and graphs

  prepareBatch(batch: ForwardBatch): BatchMeta {
    return this.metaStore.prepare(batch);
  }

  /**
   * Records what `fn` enqueues into a CUDA graph. `fn` must be a capturable step: device work
   * only, into buffers that outlive the graph, with no host reads (they throw), allocations
   * beyond what the pool already holds (they throw) or synchronisation. Its outputs are read
   * after each replay by the caller, from the same buffers.
   */
  async captureGraph(fn: () => Promise<void>): Promise<CudaGraph> {
    this.dev.sync();
    this.dev.beginCapture();
    try {
      await fn();
    } catch (e) {
      try {
        this.dev.endCapture().destroy();
      } catch {
        // the capture was already invalidated; report the first error
      }
      throw e;
    }
    return this.dev.endCapture();
  }

  synchronize(): void {
    this.dev.sync();
  }

  // ------------------------------------------------------------------ ops

  embedding(out: Tensor, table: Tensor, meta: BatchMeta): void {
    ew.embedding(this.ctx, out, table, meta as CudaBatchMeta);
  }

  rmsNorm(out: Tensor, x: Tensor, w: Tensor, eps: number): void {
    ew.rmsNorm(this.ctx, out, x, w, eps);
  }

  addRmsNorm(out: Tensor, residual: Tensor, x: Tensor, w: Tensor, eps: number): void {
    ew.addRmsNorm(this.ctx, out, residual, x, w, eps);
  }

  matmul(out: Tensor, x: Tensor, w: Tensor): void {
    matmul(this.ctx, this.gemm, out, x, w, this.skinny);
  }

  /** Replaces the kernel choices between steps (benchmarks; see kernel-tuning.ts). */
  setTuning(t: Partial<KernelTuning>): void {
    this.ctx.tuning = kernelTuning(t);
  }

  matmulMany(outs: readonly Tensor[], x: Tensor, ws: readonly Tensor[]): void {
    matmulMany(this.ctx, this.gemm, outs, x, ws, this.skinny);
  }

  matmulRowInvariantFrom(w: Tensor): number {
    return matmulRowInvariantFrom(w, this.skinny);
  }

  /** Small-M bf16 GEMMs on the tensor-core streaming kernel instead of cuBLAS (default on). */
  skinny = readEnv().cudaSkinny;

  add(out: Tensor, a: Tensor, b: Tensor): void {
    ew.add(this.ctx, out, a, b);
  }

  rope(x: Tensor, meta: BatchMeta, o: RopeOptions): void {
    ew.rope(this.ctx, x, meta as CudaBatchMeta, o);
  }

  /**
   * kernels/norm-rope-cache.cu where it takes the dtypes, else the steps: the same bits
   * (gpu-check --only fused, every value, since session 6), about 25 fewer launches per decode
   * step.
   */
  normRopeCache(a: NormRopeCacheArgs, meta: BatchMeta): void {
    if (!fusedNormRopeCache(this.ctx, a, meta as CudaBatchMeta)) normRopeCacheSteps(this, a, meta);
  }

  writeCache(cache: Tensor, x: Tensor, meta: BatchMeta, scale = 1): void {
    ew.writeCache(this.ctx, cache, x, meta as CudaBatchMeta, scale);
  }

  attention(
    out: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    meta: BatchMeta,
    o: AttentionOptions,
  ): void {
    attention(this.ctx, out, q, k, v, meta as CudaBatchMeta, o, this.prefillAttention);
  }

  msaSelect(out: Tensor, idxQ: Tensor, idxK: Tensor, meta: BatchMeta, o: MsaOptions): void {
    msaSelect(this.ctx, out, idxQ, idxK, meta as CudaBatchMeta, o, this.msaScoring);
  }

  swigluOai(out: Tensor, gateUp: Tensor, alpha: number, limit: number): void {
    ew.swigluOai(this.ctx, out, gateUp, alpha, limit);
  }

  routerTopK(
    ids: Tensor,
    weights: Tensor,
    logits: Tensor,
    bias: Tensor | null,
    o: RouterOptions,
  ): void {
    routerTopK(this.ctx, ids, weights, logits, bias, o);
  }

  moe(
    out: Tensor,
    x: Tensor,
    ids: Tensor,
    weights: Tensor,
    experts: ExpertWeights,
    o: MoeOptions,
  ): void {
    moe(this.ctx, this.gemm, out, x, ids, weights, experts, o);
  }

  moeCapturable(T: number, experts: ExpertWeights): boolean {
    return moeCapturable(T, experts);
  }

  gatherLogitRows(out: Tensor, x: Tensor, meta: BatchMeta): void {
    ew.gatherLogitRows(this.ctx, out, x, meta as CudaBatchMeta);
  }

  /** Pinned staging ring and async copies for streamed checkpoint loads. */
  weightUploader(o: WeightUploaderOptions): WeightUploader {
    return new CudaWeightUploader(this.ctx, (dst, data) => this.write(dst, data), o);
  }

  /** Fills a bf16/f32 tensor with offset + scale·U(−1, 1) on the device (random checkpoints). */
  fillRandom(t: Tensor, seed: number, scale: number, offset = 0): void {
    const c = cuda(t, 'fillRandom', ['bf16', 'f32']);
    ew.fillRandom(this.ctx, c.ptr, c.dtype === 'bf16' ? 'b' : 'f', c.numel, seed, scale, offset);
    if (c instanceof SplitF32Weight) resplit(this.ctx, c);
  }
}

/**
 * Opens the GPU and returns the backend. Throws one line ("CUDA backend unavailable: ...")
 * when the libraries or a device are missing.
 */
export async function createCudaBackend(o: CudaBackendOptions = {}): Promise<CudaBackend> {
  let dev: CudaDevice;
  try {
    dev = new CudaDevice(loadCudaLibs(), o.deviceOrdinal ?? 0);
  } catch (e) {
    const msg = (e as Error).message.split('\n')[0];
    throw new Error(`CUDA backend unavailable: ${msg}`);
  }
  return new CudaBackend(dev, o);
}

/** The GPUs this process sees (cuDeviceGetCount); one line naming the cause when it cannot. */
export function cudaDeviceCount(): number {
  try {
    const libs = loadCudaLibs();
    const check = new Checker(libs);
    check.cu(libs.cu.cuInit(0), 'cuInit');
    const n = [0];
    check.cu(libs.cu.cuDeviceGetCount(n), 'cuDeviceGetCount');
    return n[0]!;
  } catch (e) {
    throw new Error(`CUDA backend unavailable: ${(e as Error).message.split('\n')[0]}`);
  }
}

export { fmtBytes };
