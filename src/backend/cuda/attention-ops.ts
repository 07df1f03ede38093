/** Launchers for kernels/attention.cu and attention-prefill.cu (see the kernels' headers); MSA selection is in msa-ops.ts. */
import type { AttentionOptions } from '../backend.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { CudaBatchMeta } from './batch-meta.js';
import { cuda, letter } from './cuda-tensor.js';
import { kvDefines, kvScales } from './kv-cache-args.js';
import { launchKernel } from './kernel-launch.js';
import { attentionDecode, decodeAttentionFits } from './attention-decode.js';
import { attentionPrefillWg, wgPrefillFits } from './attention-prefill-wg.js';
import { ATTENTION, ATTENTION_COMBINE, ATTENTION_PREFILL } from './kernel-table.js';
import type { OpContext } from './op-context.js';

function pow2AtLeast(n: number, max: number, what: string): number {
  let p = 1;
  while (p < n) p *= 2;
  if (p > max) throw new Error(`attention: ${what} is too large for the CUDA kernel`);
  return p;
}

/**
 * Which kernels take bf16 attention: the tensor-core ones (prefill on
 * kernels/attention-prefill.cu's mma.sync, kernels/attention-decode.cu for decode and long
 * MSA-sparse batches), 'wgmma' the same with prefill on kernels/attention-prefill-wg.cu's
 * Hopper warpgroup MMA where it fits (opt-in until measured and checked on a GPU), or the
 * scalar kernels/attention.cu for every batch (the comparison the GPU checks make).
 */
export type PrefillAttention = 'tensor-cores' | 'wgmma' | 'scalar';

/**
 * Batches averaging at least this many tokens per sequence (prefill chunks) go to the
 * tensor-core kernel: its 64-token tiles then run mostly full, while decode-heavy batches keep
 * the scalar kernel's split-KV.
 */
export const PREFILL_TOKENS_PER_SEQ = 64;

/**
 * MSA-sparse prefill batches whose sequences hold at most this many keys go to the prefill
 * kernel's sparse form (FA_SPARSE: each 128-row tile walks the union of its rows' selected
 * blocks, masking per row), longer ones to the decode kernel (one token per block). The union
 * can be every block (random weights select near-random blocks), where the prefill kernel does
 * the dense causal work; at 8,192 keys that dense work still costs less than the decode
 * kernel's sparse work (W1 of 2026-12-02: the MSA layer's attention ~7.4 ms on the decode
 * kernel against ~5.9 ms for a dense layer), and the two meet near 12-16k keys.
 */
export const SPARSE_PREFILL_MAX_KEYS = 12_288;

/** Dynamic shared memory a prefill block may take (227 KiB on sm_90, less its static 1 KiB). */
const PREFILL_MAX_SMEM = 227 * 1024 - 1024;

export function attention(
  ctx: OpContext,
  out: Tensor,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  meta: CudaBatchMeta,
  o: AttentionOptions,
  prefill: PrefillAttention = 'tensor-cores',
): void {
  const T = meta.numTokens;
  const prefillShaped =
    prefill !== 'scalar' &&
    out.dtype === 'bf16' &&
    o.headDim % 16 === 0 &&
    o.headDim <= 128 &&
    T >= PREFILL_TOKENS_PER_SEQ * meta.numSeqs;
  if (prefillShaped && (!o.blocks || sparseIsDense(ctx, meta, o, k))) {
    const dense = { ...o, blocks: null };
    if (prefill === 'wgmma' && wgPrefillFits(ctx, k, o))
      attentionPrefillWg(ctx, out, q, k, v, meta, dense);
    else attentionPrefill(ctx, out, q, k, v, meta, dense);
    return;
  }
  if (prefillShaped && sparsePrefillFits(ctx, meta, o, k)) {
    if (prefill === 'wgmma' && wgPrefillFits(ctx, k, o, meta.pageStride))
      attentionPrefillWg(ctx, out, q, k, v, meta, o);
    else attentionPrefill(ctx, out, q, k, v, meta, o);
    return;
  }
  if (prefill !== 'scalar' && decodeAttentionFits(out.dtype, o)) {
    attentionDecode(ctx, attentionTensors(out, q, k, v, T, o, ['bf16']), meta, o);
    return;
  }
  if (k.dtype === 'f8e4m3') throw new Error(fp8Unsupported(out, o, prefill));
  scalarAttention(ctx, out, q, k, v, meta, o);
}

/** Every batch on the scalar flash kernel (kernels/attention.cu), bf16 or f32. */
function scalarAttention(
  ctx: OpContext,
  out: Tensor,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  meta: CudaBatchMeta,
  o: AttentionOptions,
): void {
  const T = meta.numTokens;
  const { numHeads: H, numKvHeads: Hkv, headDim: Dh } = o;
  const { qo, qi, kc, vc } = attentionTensors(out, q, k, v, T, o, ['bf16', 'f32']);
  const S = kc.shape[1]!;
  const G = H / Hkv;
  const MH = pow2AtLeast(Math.ceil(G / 4), 8, `a GQA group of ${G}`);
  const MD = pow2AtLeast(Math.ceil(Dh / 32), 8, `head_dim ${Dh}`);
  let blocks = 0;
  let topk = 0;
  if (o.blocks) {
    topk = o.blocks.shape[2]!;
    blocks = cuda(o.blocks, 'attention.blocks', ['i32'], [Hkv, T, topk]).ptr;
  }
  const l = letter(qo, 'attention');
  const defines = { ATTN_T: l === 'b' ? 'bf16_t' : 'float', ATTN_MH: MH, ATTN_MD: MD };
  const smem = (G * Dh + 2 * 32 * (Dh + 1)) * 4;
  // Split the keys when there are too few (token, KV head) blocks to fill the GPU (decode).
  const splits = Math.max(1, Math.min(16, Math.floor((2 * ctx.dev.smCount) / (T * Hkv))));
  const part = splits > 1 ? ctx.ws.get('attention.partials', T * H * splits * (Dh + 2) * 4) : 0;
  launchKernel(
    ctx,
    ATTENTION,
    'attention',
    { grid: [T, Hkv, splits], block: [128, 1, 1], smem, defines },
    {
      out: qo.ptr,
      q: qi.ptr,
      kc: kc.ptr,
      vc: vc.ptr,
      positions: meta.positions,
      seqOfToken: meta.seqOfToken,
      pageTable: meta.pageTable,
      pageStride: meta.pageStride,
      T,
      H,
      Hkv,
      Dh,
      S,
      scale: o.scale,
      blocks,
      topk,
      part,
    },
  );
  if (splits > 1) {
    const shape = { grid: [T, H, 1], block: [128, 1, 1], defines } as const;
    launchKernel(ctx, ATTENTION_COMBINE, 'attention_combine', shape, {
      out: qo.ptr,
      part,
      H,
      Dh,
      splits,
    });
  }
}

/**
 * Whether MSA-sparse attention over `o.blocks` is exactly dense causal attention: no token of
 * the batch sees more than topk blocks of S keys, so its selection holds every one of them (the
 * selection's definition: top-k of at most k candidates, shared/golden/README.md) and the dense
 * prefill kernel computes the same sums without reading each token's keys separately. Decided
 * on the host from the batch, so never while a graph is captured (a replay carries longer
 * sequences).
 */
function sparseIsDense(ctx: OpContext, meta: CudaBatchMeta, o: AttentionOptions, k: Tensor) {
  if (!o.blocks || ctx.dev.isCapturing) return false;
  const S = k.shape[1]!;
  const topk = o.blocks.shape[2]!;
  return meta.batch.seqs.every((s) => Math.floor((s.numCached + s.numNew - 1) / S) < topk);
}

/**
 * Whether the prefill kernel's sparse form takes this MSA batch: decided on the host from the
 * batch (never while capturing), every sequence within SPARSE_PREFILL_MAX_KEYS, and its
 * per-row block bitmaps within shared memory.
 */
function sparsePrefillFits(
  ctx: OpContext,
  meta: CudaBatchMeta,
  o: AttentionOptions,
  k: Tensor,
): boolean {
  if (!o.blocks || ctx.dev.isCapturing) return false;
  if (meta.batch.seqs.some((s) => s.numCached + s.numNew > SPARSE_PREFILL_MAX_KEYS)) return false;
  const { smem } = prefillShape(o, k.dtype, meta.pageStride, true);
  return smem <= PREFILL_MAX_SMEM;
}

/**
 * Block shape, dynamic shared memory and bitmap words per row (sparse) of a prefill launch:
 * two stages of K and V tiles, then (MW 2) a Q tile of 128 rows per head, then (sparse) the
 * rows' block bitmaps and their union.
 */
function prefillShape(
  o: AttentionOptions,
  kvDtype: string,
  pageStride: number,
  sparse: boolean,
  tiling?: PrefillTiling,
): { HB: number; MW: number; smem: number; nbw: number } {
  const { numHeads: H, numKvHeads: Hkv, headDim: Dh } = o;
  const fp8 = kvDtype === 'f8e4m3';
  // bf16: one head and 32 rows per warp, measured fastest with the v3 kernel (session 6 W2,
  // one layer: 170 / 258 TFLOP/s at 2,048 / 8,192 tokens against 149 / 246 for two heads per
  // block; its 104 KB of shared memory let two blocks share an SM). FP8 caches keep two heads
  // and 16 rows (the widening loads push 32 rows past the register file).
  const HB = tiling?.heads ?? (fp8 && (H / Hkv) % 2 === 0 ? 2 : 1);
  const MW = tiling?.mTiles ?? (fp8 ? 1 : 2);
  const nbw = sparse ? Math.ceil(pageStride / 32) : 0;
  const smem = (2 * 2 * 64 + (MW - 1) * HB * 128) * (Dh + 8) * 2 + (64 * MW + 1) * nbw * 4;
  return { HB, MW, smem, nbw };
}

/** Why the scalar kernel cannot take an FP8 cache (it reads bf16 or f32 only). */
function fp8Unsupported(out: Tensor, o: AttentionOptions, prefill: PrefillAttention): string {
  return (
    'attention: an FP8 KV cache (--kv-cache-dtype fp8) is read by the tensor-core kernels only: ' +
    `bf16 activations, head_dim a multiple of 16 up to 128, a GQA group of at most 16 (got ${out.dtype}, ` +
    `head_dim ${o.headDim}, group ${o.numHeads / o.numKvHeads}${prefill === 'scalar' ? ', scalar attention asked for' : ''})`
  );
}

/** out/q [T, H·Dh] and the paged K/V cache [P, S, Hkv·Dh] of one dtype, checked for both kernels. */
function attentionTensors(
  out: Tensor,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  T: number,
  o: AttentionOptions,
  dtypes: Parameters<typeof cuda>[2],
) {
  const { numHeads: H, numKvHeads: Hkv, headDim: Dh } = o;
  const qo = cuda(out, 'attention.out', dtypes, [T, H * Dh]);
  const qi = cuda(q, 'attention.q', [qo.dtype], [T, H * Dh]);
  // bf16 tensor-core kernels also read FP8 caches (KV_FP8).
  const kc = cuda(k, 'attention.k', qo.dtype === 'bf16' ? ['bf16', 'f8e4m3'] : [qo.dtype]);
  const vc = cuda(v, 'attention.v', [kc.dtype], kc.shape);
  if (kc.shape.length !== 3 || kc.shape[2] !== Hkv * Dh)
    throw new Error(`attention: cache shape [${kc.shape.join(', ')}] is not [P, S, ${Hkv * Dh}]`);
  return { qo, qi, kc, vc };
}

/**
 * Shape of a prefill block (kernels/attention-prefill.cu): `heads` query heads of one KV group
 * share its K/V tiles (FA_HB), each warp holds `mTiles` 16-row tiles (FA_MW: 2 reads Q from
 * shared memory and feeds each K/V fragment to two MMAs).
 */
export interface PrefillTiling {
  readonly heads: 1 | 2;
  readonly mTiles: 1 | 2;
}

/**
 * bf16 causal attention on tensor cores (kernels/attention-prefill.cu): dense, or with
 * `o.blocks` MSA-sparse (each token attends the keys of its selected blocks).
 */
export function attentionPrefill(
  ctx: OpContext,
  out: Tensor,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  meta: CudaBatchMeta,
  o: AttentionOptions,
  tiling?: PrefillTiling,
): void {
  const T = meta.numTokens;
  const { numHeads: H, numKvHeads: Hkv, headDim: Dh } = o;
  const { qo, qi, kc, vc } = attentionTensors(out, q, k, v, T, o, ['bf16']);
  if (H % Hkv !== 0) throw new Error(`attention: ${H} heads are not a multiple of ${Hkv} KV heads`);
  const sparse = o.blocks !== null;
  const { HB, MW, smem, nbw } = prefillShape(o, kc.dtype, meta.pageStride, sparse, tiling);
  if ((H / Hkv) % HB !== 0)
    throw new Error(`attention: ${HB} heads per block do not divide a GQA group of ${H / Hkv}`);
  const topk = o.blocks ? o.blocks.shape[2]! : 0;
  const blocks = o.blocks ? cuda(o.blocks, 'attention.blocks', ['i32'], [Hkv, T, topk]).ptr : 0;
  launchKernel(
    ctx,
    ATTENTION_PREFILL,
    'attention_prefill',
    {
      grid: [Math.ceil(T / (64 * MW)), H / HB, 1],
      block: [128 * HB, 1, 1],
      smem,
      defines: kvDefines(kc, { FA_DH: Dh, FA_HB: HB, FA_MW: MW, FA_SPARSE: sparse ? 1 : 0 }),
    },
    {
      out: qo.ptr,
      q: qi.ptr,
      kc: kc.ptr,
      vc: vc.ptr,
      positions: meta.positions,
      seqOfToken: meta.seqOfToken,
      pageTable: meta.pageTable,
      pageStride: meta.pageStride,
      T,
      H,
      Hkv,
      S: kc.shape[1]!,
      ...kvScales(kc, o),
      blocks,
      topk,
      nbw,
    },
  );
}
