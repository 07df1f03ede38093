/**
 * Launchers for MSA block selection: kernels/msa-score.cu (tensor cores) and kernels/msa.cu;
 * both score FP8 index keys (--kv-cache-dtype fp8: msa-score.cu under -DKV_FP8, msa_select_*8).
 */
import type { MsaOptions } from '../backend.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { CudaBatchMeta } from './batch-meta.js';
import { cuda, letter, type CudaTensor } from './cuda-tensor.js';
import { kvDefines } from './kv-cache-args.js';
import { launchKernel } from './kernel-launch.js';
import { MSA_BLOCK_SCORES, MSA_SELECT, MSA_TOPK } from './kernel-table.js';
import type { OpContext } from './op-context.js';

/** Which kernels select MSA blocks: msa-score.cu's tensor-core scoring or msa.cu's scalar one. */
export type MsaScoring = 'tensor-cores' | 'scalar';

/** Bytes of block scores ([Hi, chunk, pageStride] f32) one chunk may use. */
const SCORE_BYTES = 256 * 2 ** 20;

export function msaSelect(
  ctx: OpContext,
  out: Tensor,
  idxQ: Tensor,
  idxK: Tensor,
  meta: CudaBatchMeta,
  o: MsaOptions,
  scoring: MsaScoring,
): void {
  const T = meta.numTokens;
  const { numIndexHeads: Hi, indexDim: Di, topk } = o;
  const oo = cuda(out, 'msaSelect.out', ['i32'], [Hi, T, topk]);
  const qi = cuda(idxQ, 'msaSelect.idxQ', ['bf16', 'f32'], [T, Hi * Di]);
  const kc = cuda(idxK, 'msaSelect.idxK', ['bf16', 'f32', 'f8e4m3']);
  if (kc.shape.length !== 3 || kc.shape[2] !== Di)
    throw new Error(`msaSelect: index cache shape [${kc.shape.join(', ')}] is not [P, S, ${Di}]`);
  const S = kc.shape[1]!;
  const mma =
    qi.dtype === 'bf16' &&
    (kc.dtype === 'bf16' || kc.dtype === 'f8e4m3') &&
    Di % 16 === 0 &&
    Di <= 128 &&
    S % 64 === 0;
  if (scoring === 'tensor-cores' && mma) {
    blockScoresTopk(ctx, oo.ptr, qi.ptr, kc, meta, o, S);
    return;
  }
  const smem = Math.ceil(((Di + meta.pageStride) * 4 + meta.pageStride) / 16) * 16;
  launchKernel(
    ctx,
    MSA_SELECT,
    `msa_select_${letter(qi, 'msaSelect')}${kc.dtype === 'f8e4m3' ? '8' : letter(kc, 'msaSelect')}`,
    { grid: [T, Hi, 1], block: [128, 1, 1], smem },
    {
      out: oo.ptr,
      idxQ: qi.ptr,
      idxK: kc.ptr,
      positions: meta.positions,
      seqOfToken: meta.seqOfToken,
      pageTable: meta.pageTable,
      pageStride: meta.pageStride,
      T,
      Hi,
      Di,
      S,
      topk,
      initBlocks: o.initBlocks,
      localBlocks: o.localBlocks,
    },
  );
}

/**
 * Block scores on tensor cores, then the top-k pick, in token chunks whose [Hi, chunk,
 * pageStride] scores fit SCORE_BYTES. Key blocks are split over grid z until the launch has
 * about two blocks per SM (decode: few tokens, long contexts).
 */
function blockScoresTopk(
  ctx: OpContext,
  out: number,
  idxQ: number,
  kc: CudaTensor,
  meta: CudaBatchMeta,
  o: MsaOptions,
  S: number,
): void {
  const T = meta.numTokens;
  const { numIndexHeads: Hi, indexDim: Di, topk } = o;
  const stride = meta.pageStride;
  const chunk = Math.max(64, Math.min(T, Math.floor(SCORE_BYTES / (4 * Hi * stride) / 64) * 64));
  const scores = ctx.ws.get('msa.scores', 4 * Hi * Math.min(chunk, T) * stride);
  const smemScores = 2 * 64 * (Di + 8) * 2;
  const smemTopk = Math.ceil((stride * 5) / 16) * 16;
  // Decode (one token per sequence): one token per block, so sequences score in parallel.
  const tileRows = meta.numSeqs === T ? 1 : 64;
  for (let t0 = 0; t0 < T; t0 += chunk) {
    const nT = Math.min(chunk, T - t0);
    const tiles = Math.ceil(nT / tileRows);
    const Z = Math.max(1, Math.min(stride, Math.ceil((2 * ctx.dev.smCount) / (tiles * Hi))));
    launchKernel(
      ctx,
      MSA_BLOCK_SCORES,
      'msa_block_scores',
      {
        grid: [tiles, Hi, Z],
        block: [128, 1, 1],
        smem: smemScores,
        defines: kvDefines(kc, { MSA_DI: Di }),
      },
      {
        scores,
        idxQ,
        idxK: kc.ptr,
        positions: meta.positions,
        seqOfToken: meta.seqOfToken,
        pageTable: meta.pageTable,
        pageStride: stride,
        t0,
        nT,
        Hi,
        S,
        tileRows,
        topk,
      },
    );
    launchKernel(
      ctx,
      MSA_TOPK,
      'msa_topk',
      { grid: [nT, Hi, 1], block: [128, 1, 1], smem: smemTopk },
      {
        out,
        scores,
        positions: meta.positions,
        pageStride: stride,
        t0,
        nT,
        T,
        S,
        topk,
        initBlocks: o.initBlocks,
        localBlocks: o.localBlocks,
      },
    );
  }
}
