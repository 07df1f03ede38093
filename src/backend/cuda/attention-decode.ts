/** Launcher for kernels/attention-decode.cu (GQA-packed tensor-core attention, see its header). */
import type { AttentionOptions, KvShape } from '../backend.js';
import type { CudaBatchMeta } from './batch-meta.js';
import type { CudaTensor } from './cuda-tensor.js';
import { cuda } from './cuda-tensor.js';
import { kvDefines, kvScales } from './kv-cache-args.js';
import { launchKernel } from './kernel-launch.js';
import { ATTENTION_COMBINE, ATTENTION_DECODE } from './kernel-table.js';
import type { OpContext } from './op-context.js';

export const KEYS_PER_TILE = 64;
/** Sparse tiles one block may hold (MAX_TILES in the kernel). */
export const MAX_TILES = 128;
/**
 * Key splits per (token, KV group); long contexts at small batches use them all. 96 (was 32):
 * at batch 1 that makes 384 blocks, about 3 per SM resident, so a 100k-token context streams
 * with three K/V tiles in flight per SM instead of one (the split count cannot depend on the
 * context: decode graphs fix the grid at capture).
 */
export const MAX_SPLITS = 96;
/** Blocks the kernel keeps resident per SM (dynamic smem 69.6 KB at Dh 128). */
const BLOCKS_PER_SM = 3;

/** Whether the tensor-core decode kernel takes these shapes. */
export function decodeAttentionFits(dtype: string, o: KvShape): boolean {
  const { numHeads: H, numKvHeads: Hkv, headDim: Dh } = o;
  return dtype === 'bf16' && Dh % 16 === 0 && Dh <= 128 && H % Hkv === 0 && H / Hkv <= 16;
}

export interface AttentionOperands {
  readonly qo: CudaTensor;
  readonly qi: CudaTensor;
  readonly kc: CudaTensor;
  readonly vc: CudaTensor;
}

/**
 * Splits so that (tokens x KV groups x splits) blocks fill the GPU a few times over; sparse
 * batches never split past their top-k blocks, nor so far that a block's share of them
 * overflows its tile list.
 */
export function splitsFor(
  smCount: number,
  T: number,
  Hkv: number,
  topk: number,
  S: number,
): number {
  let splits = Math.floor((BLOCKS_PER_SM * smCount) / (T * Hkv));
  splits = Math.max(1, Math.min(MAX_SPLITS, splits));
  if (topk > 0) {
    splits = Math.min(splits, topk);
    const tilesPerBlock = Math.ceil(S / KEYS_PER_TILE);
    if (tilesPerBlock > MAX_TILES)
      throw new Error(`attention: MSA blocks of ${S} keys exceed the decode kernel's tile list`);
    while (Math.ceil(topk / splits) * tilesPerBlock > MAX_TILES) splits++;
  }
  return splits;
}

export function attentionDecode(
  ctx: OpContext,
  t: AttentionOperands,
  meta: CudaBatchMeta,
  o: AttentionOptions,
): void {
  const T = meta.numTokens;
  const { numHeads: H, numKvHeads: Hkv, headDim: Dh } = o;
  const S = t.kc.shape[1]!;
  let blocks = 0;
  let topk = 0;
  if (o.blocks) {
    topk = o.blocks.shape[2]!;
    blocks = cuda(o.blocks, 'attention.blocks', ['i32'], [Hkv, T, topk]).ptr;
  }
  const splits = splitsFor(ctx.dev.smCount, T, Hkv, topk, S);
  const part = splits > 1 ? ctx.ws.get('attention.partials', T * H * splits * (Dh + 2) * 4) : 0;
  // bf16: two K|V stages; FP8: one bf16 K|V tile and two stages of codes (attention-decode.cu).
  const smem =
    t.kc.dtype === 'f8e4m3'
      ? KEYS_PER_TILE * 2 * (Dh + 8) * 2 + 2 * 2 * KEYS_PER_TILE * Dh
      : 2 * KEYS_PER_TILE * 2 * (Dh + 8) * 2;
  launchKernel(
    ctx,
    ATTENTION_DECODE,
    'attention_decode',
    { grid: [T, Hkv, splits], block: [128, 1, 1], smem, defines: kvDefines(t.kc, { AD_DH: Dh }) },
    {
      out: t.qo.ptr,
      q: t.qi.ptr,
      kc: t.kc.ptr,
      vc: t.vc.ptr,
      positions: meta.positions,
      seqOfToken: meta.seqOfToken,
      pageTable: meta.pageTable,
      pageStride: meta.pageStride,
      T,
      H,
      Hkv,
      S,
      ...kvScales(t.kc, o),
      blocks,
      topk,
      part,
    },
  );
  if (splits > 1) {
    const defines = { ATTN_T: 'bf16_t', ATTN_MH: 4, ATTN_MD: 4 };
    launchKernel(
      ctx,
      ATTENTION_COMBINE,
      'attention_combine',
      { grid: [T, H, 1], block: [128, 1, 1], defines },
      { out: t.qo.ptr, part, H, Dh, splits },
    );
  }
}
