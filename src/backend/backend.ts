import type { DType } from '../tensor/dtype.js';
import type { Fp8Scaling, Fp8Weight } from '../tensor/fp8-weight.js';
import type { Shape } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import type { ForwardBatch } from './forward-batch.js';
import type { WeightUploader, WeightUploaderOptions } from './weight-uploader.js';

/**
 * Shape legend (docs/architecture.md): T tokens in the step, D hidden, H query heads,
 * Hkv KV heads, Dh head dim, E experts, K experts per token, I expert width, V vocab,
 * P pages, S page size.
 *
 * Contract for every op: outputs are caller-provided tensors of exactly the documented
 * shape (checked), inputs are never modified unless the op says "in place", and an op may
 * be recorded into a CUDA graph, so it must not read tensor contents back to the host.
 */
export interface Backend {
  readonly name: 'cpu' | 'cuda';
  /** Where tensor memory lives: 'host' (a CPU communicator moves it) or 'cuda' (NCCL does). */
  readonly memory: 'host' | 'cuda';
  /** CUDA: the stream every op is queued on, which collectives join (NCCL); absent on the CPU. */
  readonly cudaStream?: unknown;
  /** The dtype a tensor requested as `dtype` is stored in (a float32 backend keeps bf16 as f32). */
  storageDtype(dtype: DType): DType;

  /** A zero-filled tensor. */
  alloc(shape: Shape, dtype: DType): Tensor;
  /**
   * A tensor whose contents are undefined, for an op that writes every element before anything
   * reads it. Optional: a backend without it gives callers alloc (StepContext.output).
   */
  allocUninitialized?(shape: Shape, dtype: DType): Tensor;
  /**
   * Optional: a zero f32 weight [N, K] that `matmul` multiplies bf16 activations with (the
   * MoE router). Every op reads it as an f32 tensor. A backend may keep a derived copy of its
   * values beside them, which its own writes into it (write, fillRandom, weight uploads;
   * views included) keep current, for a faster product of the same values (CUDA: three bf16
   * parts, cuda/split-f32-weight.ts). Absent: alloc(shape, 'f32').
   */
  allocF32Weight?(shape: Shape): Tensor;
  /** Copies host data in. `dtype` is the storage the caller wants ('bf16' may be kept as f32 by a float32 backend). */
  upload(data: Float32Array | Int32Array, shape: Shape, dtype: DType): Tensor;
  /** Copies host data into an existing tensor or `rows` view (same element count), converting to its dtype. */
  write(dst: Tensor, data: Float32Array | Int32Array): void;
  /** Copies a float tensor out as float32 (synchronises). */
  readF32(t: Tensor): Float32Array;
  /** Copies an i32 tensor out (synchronises). */
  readI32(t: Tensor): Int32Array;
  free(t: Tensor): void;
  /**
   * Fills a float tensor (or `rows` view) with scale · U(−1, 1) from a hash of (seed, element
   * index), rounded to its storage type; the same values on every backend (dummy weights).
   */
  fillRandom(t: Tensor, seed: number, scale: number): void;
  /**
   * Staging for streaming checkpoint bytes into weights (pinned memory and async copies on
   * CUDA). Absent: the loader uses HostWeightUploader over `write`.
   */
  weightUploader?(o: WeightUploaderOptions): WeightUploader;
  /**
   * FP8 weights kept in FP8 (CUDA). Absent: the backend computes in float32 on dequantized
   * weights (the CPU reference), which is what every op on an Fp8Weight is defined to compute.
   */
  readonly fp8?: Fp8WeightOps;
  /**
   * Marks `t` as holding the dequantized values of an FP8 weight of `scaling`, on a backend
   * without `fp8` (the CPU): its ops then compute what they compute on that FP8 weight, the
   * W8A8 rule included (tensor/fp8-activation.ts). The loader, `--quantization fp8` and the
   * GPU checks' weight mirrors call it; marking a view marks the tensor it lies in.
   */
  markDequantizedFp8?(t: Tensor, scaling: Fp8Scaling): void;
  /** Same storage, another shape with the same element count. */
  view(t: Tensor, shape: Shape): Tensor;
  /** Rows [start, start+count) of the outermost dimension, sharing storage. */
  rows(t: Tensor, start: number, count: number): Tensor;

  /** Derives and stores the per-token arrays of a step (positions, slots, ids). */
  prepareBatch(batch: ForwardBatch): BatchMeta;

  /** out[t] = table[ids[t]]. out [T, D], table [V, D]. */
  embedding(out: Tensor, table: Tensor, meta: BatchMeta): void;
  /** Gemma RMSNorm over rows of w.length: out = x/rms(x) * (1 + w), computed in f32. out may be x. */
  rmsNorm(out: Tensor, x: Tensor, w: Tensor, eps: number): void;
  /** residual += x (in place), then out = rmsNorm(residual). */
  addRmsNorm(out: Tensor, residual: Tensor, x: Tensor, w: Tensor, eps: number): void;
  /**
   * out [M, N] = x [M, K] · w [N, K]^T; w may be an Fp8Weight (its dequantized values). On a
   * block-FP8 weight (or one marked with markDequantizedFp8) where `w8a8Applies` (M ≥ 257,
   * tensor/fp8-activation.ts), x is first quantized per row and 128 inputs (W8A8): out means
   * Q(x) · w^T. An f32 w with bf16 x (the router) is the product in f32 arithmetic, exact
   * products or f32-rounded ones summed in f32 in each backend's order: the CPU's f32 FMAs;
   * CUDA's f32 cuBLAS GEMM on x converted to f32, or, from BF16X3_MIN_ROWS (8) rows on a
   * weight from allocF32Weight, ((x · W1^T) + (x · W2^T)) + (x · W3^T) over the bf16 parts
   * W1 = bf16(w), W2 = bf16(w − W1), W3 = bf16(w − W1 − W2), whose sum is w exactly for
   * |w| ≥ 2^-110 and whose bf16 products are exact in f32 (cuda/matmul-bf16x3.ts), as one
   * tensor-core GEMM with f32 accumulation.
   */
  matmul(out: Tensor, x: Tensor, w: Tensor): void;
  /**
   * Optional: outs[i] = x · ws[i]^T for every i (weights of one K, any N): the projections
   * that read the same input (q, k, v and the MSA index q, k) as one call, where a backend
   * saves per-call work by it. The CPU's results are exactly matmul's one by one; CUDA runs
   * weights stored as adjacent rows of one allocation as one GEMM from PACKED_MIN_ROWS rows
   * (cuda/matmul-many.ts), whose rounding is cuBLAS's for that shape.
   */
  matmulMany?(outs: readonly Tensor[], x: Tensor, ws: readonly Tensor[]): void;
  /**
   * Optional: the least row count M from which every row of `matmul(·, x, w)` has the same
   * bits whatever rows one call takes (decode kernels may split K by M below it). Absent:
   * unknown, so callers that need it (GEMM + reduce-scatter) must not split the rows.
   */
  matmulRowInvariantFrom?(w: Tensor): number;
  /** out = a + b, same shapes. out may alias a. */
  add(out: Tensor, a: Tensor, b: Tensor): void;
  /** In-place partial NeoX RoPE on x [T, nHeads*Dh]: pairs (i, i + rotaryDim/2), i < rotaryDim/2. */
  rope(x: Tensor, meta: BatchMeta, o: RopeOptions): void;
  /**
   * Scatters x [T, W] into cache [P, S, W] at each token's slot, rounded to the cache's dtype.
   * An `f8e4m3` cache (--kv-cache-dtype fp8) stores E4M3(x / scale) (f32 division, round to
   * nearest even, saturating at ±448, as vLLM) and means code × scale; a backend may keep that
   * value instead of the code (the CPU does, in f32). Other caches take scale 1 only.
   */
  writeCache(cache: Tensor, x: Tensor, meta: BatchMeta, scale?: number): void;
  /**
   * Optional fusion of an attention layer's input steps, with exactly the results of
   *   rmsNorm(q, q, qNorm); rmsNorm(k, k, kNorm); rope(q); rope(k);
   *   writeCache(kCache, k, kScale); writeCache(vCache, v, vScale)   (no v: the last is skipped)
   * (q [T, Hq*Dh], k [T, Hk*Dh] updated in place). model/minimax-m3/norm-rope-cache.ts runs
   * the sequence where a backend has none.
   */
  normRopeCache?(o: NormRopeCacheArgs, meta: BatchMeta): void;
  /**
   * Causal GQA attention of q [T, H*Dh] over the paged caches k, v [P, S, Hkv*Dh] (this step's
   * K/V already written). With `blocks` [Hkv, T, topk] (i32, −1 = unused) each KV group only
   * attends to the listed S-sized blocks. out [T, H*Dh].
   */
  attention(
    out: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    meta: BatchMeta,
    o: AttentionOptions,
  ): void;
  /**
   * MSA block selection: out [Hkv, T, topk] i32 from idxQ [T, Hidx*Didx] and idxK cache
   * [P, S, Didx] (bf16, or f8e4m3 written with scale 1).
   */
  msaSelect(out: Tensor, idxQ: Tensor, idxK: Tensor, meta: BatchMeta, o: MsaOptions): void;
  /** SwiGLU-OAI on gate|up halves: gu [M, 2I] -> out [M, I]. */
  swigluOai(out: Tensor, gateUp: Tensor, alpha: number, limit: number): void;
  /**
   * Router: sigmoid(logits [T, E]) with the bias for selection only; the top-K ids (sorted
   * by biased score, descending) into ids [T, K'] and renormalised, scaled weights [T, K'].
   * With `sharedExpertId` set, K' = K + 1 and column K is that id with weight exactly 1.0.
   */
  routerTopK(
    ids: Tensor,
    weights: Tensor,
    logits: Tensor,
    bias: Tensor | null,
    o: RouterOptions,
  ): void;
  /**
   * out [T, D] = Σ_j weights[t, j] · Expert_{ids[t, j]}(x[t]) over experts this rank holds
   * (global ids firstExpert .. firstExpert+E_local-1; other ids contribute nothing).
   * Expert e: down[e] · swigluOai(gateUp[e] · x). gateUp [E_local, 2I, D], down [E_local, D, I].
   * Block-FP8 experts where `w8a8MoeApplies` (T ≥ 257 tokens, tensor/fp8-activation.ts) take
   * W8A8: x is quantized per row and 128 inputs before gate|up, the SwiGLU output before down.
   */
  moe(
    out: Tensor,
    x: Tensor,
    ids: Tensor,
    weights: Tensor,
    experts: ExpertWeights,
    o: MoeOptions,
  ): void;
  /**
   * Optional: true when `moe` takes `MoeOptions.shared` with these weights (the shared expert
   * added to out). Where it is absent or false the option is never given; the caller runs the
   * shared MLP itself.
   */
  moeTakesShared?(shared: SharedExpertWeights): boolean;
  /**
   * Optional: false when `moe` on these experts at T tokens reads the device on the host (CUDA:
   * W8A8 experts at prefill sizes plan their per-expert GEMMs from the row counts), so a step
   * that runs it must not be captured into a CUDA graph. Absent: always capturable.
   */
  moeCapturable?(T: number, experts: ExpertWeights): boolean;
  /** out [R, D] = x rows listed in meta.logitRows. */
  gatherLogitRows(out: Tensor, x: Tensor, meta: BatchMeta): void;
  /**
   * Throws, naming what is missing, when this backend's attention cannot read a KV cache of
   * `dtype` at these head shapes (CUDA reads f8e4m3 with the bf16 tensor-core kernels only).
   * Absent: every cache dtype is read.
   */
  checkKvCacheDtype?(dtype: DType, o: KvShape): void;
  /** Device memory in bytes, where the backend has a fixed pool to size the KV cache from (CUDA). */
  memoryInfo?(): { free: number; total: number };
  /** Waits for queued work (no-op on the CPU). */
  synchronize(): void;
}

/** Backend-owned per-step metadata. `numTokens` and `numLogitRows` are host numbers. */
export interface BatchMeta {
  readonly batch: ForwardBatch;
  readonly numTokens: number;
  readonly numLogitRows: number;
}

export interface RopeOptions {
  readonly numHeads: number;
  readonly headDim: number;
  readonly rotaryDim: number;
  readonly theta: number;
}

export interface NormRopeCacheArgs {
  readonly q: Tensor;
  readonly k: Tensor;
  /** null for a key-only cache (the MSA index keys). */
  readonly v: Tensor | null;
  readonly qNorm: Tensor;
  readonly kNorm: Tensor;
  readonly kCache: Tensor;
  readonly vCache: Tensor | null;
  readonly numQHeads: number;
  readonly numKHeads: number;
  readonly headDim: number;
  readonly rotaryDim: number;
  readonly theta: number;
  readonly eps: number;
  readonly kScale: number;
  readonly vScale: number;
}

export interface AttentionOptions {
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly scale: number;
  /** The scales k and v were written with (writeCache), for f8e4m3 caches; default 1. */
  readonly kScale?: number;
  readonly vScale?: number;
  /** MSA: [Hkv, T, topk] selected block ids, or null for dense causal attention. */
  readonly blocks: Tensor | null;
}

export type KvShape = Pick<AttentionOptions, 'numHeads' | 'numKvHeads' | 'headDim'>;

export interface MsaOptions {
  readonly numIndexHeads: number;
  readonly indexDim: number;
  readonly topk: number;
  readonly initBlocks: number;
  readonly localBlocks: number;
}

export interface RouterOptions {
  readonly topK: number;
  readonly scale: number;
  readonly sharedExpertId: number | null;
}

/** The FP8 weight operations of a backend that keeps FP8 weights (Backend.fp8). */
export interface Fp8WeightOps {
  /** A zero FP8 weight of `shape` ([N, K] or [E, N, K]) and scaling. */
  alloc(shape: Shape, scaling: Fp8Scaling): Fp8Weight;
  /**
   * Host codes (row-major, `dst`'s element count) and per-row scales (fp8ScaleShape of dst's
   * shape: f32 for block, E8M0 bytes for mx) into `dst` (or a `rows` view of one).
   */
  write(dst: Fp8Weight, codes: Uint8Array, scales: Float32Array | Uint8Array): void;
  /**
   * Block FP8 (128 × 128 blocks per matrix, scale amax/448, E4M3 round to nearest even with
   * saturation: fp8-quantize.ts quantizeRows) of a bf16 weight [N, K] or [E, N, K], quantized
   * on the device. `src` is left as it is.
   */
  quantize(src: Tensor): Fp8Weight;
}

export interface ExpertWeights {
  /** [E_local, 2I, D]: gate rows then up rows (bf16, f32, or both FP8 weights). */
  readonly gateUp: Tensor;
  /** [E_local, D, I]. */
  readonly down: Tensor;
  readonly firstExpert: number;
  readonly numLocalExperts: number;
}

export interface MoeOptions {
  readonly alpha: number;
  readonly limit: number;
  /**
   * The unweighted shared expert, where `moeTakesShared` says so: out then also gets
   * down_s · swigluOai(gateUp_s · x), with the bits of that MLP's matmul, swigluOai, matmul
   * and an `add` of its output after the routed sum (what the caller would run).
   */
  readonly shared?: SharedExpertWeights;
}

/** A shared expert's weights (the model's dense MLP shape at the shared width Is). */
export interface SharedExpertWeights {
  /** [2·Is, D]: gate rows then up rows. */
  readonly gateUp: Tensor;
  /** [D, Is]. */
  readonly down: Tensor;
}
