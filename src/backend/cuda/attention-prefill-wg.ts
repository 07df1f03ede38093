/**
 * Launcher for kernels/attention-prefill-wg.cu: bf16 prefill attention on Hopper's warpgroup
 * MMA (wgmma), dense or MSA-sparse, the same contract as attention-prefill.cu for the shapes it
 * takes (`wgPrefillFits`); attention-ops.ts picks it.
 */
import type { AttentionOptions } from '../backend.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { CudaBatchMeta } from './batch-meta.js';
import { cuda } from './cuda-tensor.js';
import { launchKernel } from './kernel-launch.js';
import { ATTENTION_PREFILL_WG } from './kernel-table.js';
import type { OpContext } from './op-context.js';

/** Query rows per block; dynamic shared memory: Q and three K/V stages, + bitmaps (sparse). */
const ROWS = 128;
const STAGE_SMEM = 128 * 128 * 2 + 3 * 2 * 128 * 128 * 2;
const bitmapSmem = (nbw: number): number => (ROWS + 2) * nbw * 4;
/** Dynamic shared memory a block may take (227 KiB on sm_90, less its static 1 KiB). */
const MAX_SMEM = 227 * 1024 - 1024;

/**
 * Whether the wgmma kernel takes this batch: an sm_90 device (the kernel is compiled for
 * sm_90a), a bf16 cache, head_dim 128, pages a multiple of its 128-key tiles, and (sparse) the
 * block bitmaps of `pageStride` pages within shared memory (up to 96 pages: 12,288 keys).
 */
export function wgPrefillFits(
  ctx: OpContext,
  k: Tensor,
  o: AttentionOptions,
  pageStride = 0,
): boolean {
  const nbw = o.blocks ? Math.ceil(pageStride / 32) : 0;
  return (
    ctx.dev.arch === 'sm_90' &&
    k.dtype === 'bf16' &&
    o.headDim === 128 &&
    k.shape.length === 3 &&
    k.shape[1]! % 128 === 0 &&
    o.numHeads % o.numKvHeads === 0 &&
    STAGE_SMEM + bitmapSmem(nbw) <= MAX_SMEM
  );
}

/** Variants of the kernel for the GPU check and benches (default: none). */
export interface WgVariant {
  /** FA_WS: a ninth warp loads K/V, mbarriers hand stages to the consumers. */
  readonly loaderWarp?: boolean;
}

/**
 * Causal bf16 attention of a prefill batch (kernels/attention-prefill-wg.cu): dense, or with
 * `o.blocks` MSA-sparse.
 */
export function attentionPrefillWg(
  ctx: OpContext,
  out: Tensor,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  meta: CudaBatchMeta,
  o: AttentionOptions,
  variant: WgVariant = {},
): void {
  const T = meta.numTokens;
  const { numHeads: H, numKvHeads: Hkv, headDim: Dh } = o;
  if (!wgPrefillFits(ctx, k, o, meta.pageStride))
    throw new Error('attention: the wgmma prefill kernel does not take this batch (wgPrefillFits)');
  const qo = cuda(out, 'attention.out', ['bf16'], [T, H * Dh]);
  const qi = cuda(q, 'attention.q', ['bf16'], [T, H * Dh]);
  const kc = cuda(k, 'attention.k', ['bf16'], [k.shape[0]!, k.shape[1]!, Hkv * Dh]);
  const vc = cuda(v, 'attention.v', ['bf16'], kc.shape);
  const sparse = o.blocks !== null;
  const topk = o.blocks ? o.blocks.shape[2]! : 0;
  const blocks = o.blocks ? cuda(o.blocks, 'attention.blocks', ['i32'], [Hkv, T, topk]).ptr : 0;
  const nbw = sparse ? Math.ceil(meta.pageStride / 32) : 0;
  launchKernel(
    ctx,
    ATTENTION_PREFILL_WG,
    'attention_prefill_wg',
    {
      grid: [H, Math.ceil(T / ROWS), 1],
      block: [variant.loaderWarp ? 288 : 256, 1, 1],
      smem: STAGE_SMEM + bitmapSmem(nbw),
      defines: {
        FA_SPARSE: sparse ? 1 : 0,
        FA_WS: variant.loaderWarp ? 1 : 0,
      },
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
      scale: o.scale,
      vScale: 1,
      blocks,
      topk,
      nbw,
    },
  );
}
