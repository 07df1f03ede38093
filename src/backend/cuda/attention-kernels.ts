/**
 * The attention and MSA kernels' declarations (kernels/attention*.cu, msa*.cu), one per kernel
 * family as in kernel-table.ts, which re-exports them: launch sites and
 * test/kernels/kernel-decls.test.ts see one table.
 */
import { kernel, TWO_TYPES, variants } from './kernel-decl.js';

// ------------------------------------------------------------------ kernels/attention.cu
const ATTN_DEFINES = ['ATTN_T', 'ATTN_MH', 'ATTN_MD'] as const;
export const ATTENTION = kernel({
  file: 'attention',
  names: ['attention'],
  args: {
    out: 'ptr',
    q: 'ptr',
    kc: 'ptr',
    vc: 'ptr',
    positions: 'ptr',
    seqOfToken: 'ptr',
    pageTable: 'ptr',
    pageStride: 'i32',
    T: 'i32',
    H: 'i32',
    Hkv: 'i32',
    Dh: 'i32',
    S: 'i32',
    scale: 'f32',
    blocks: 'ptr',
    topk: 'i32',
    part: 'ptr',
  },
  launch: 'grid (T, Hkv, splits), block 128, dyn smem (G*Dh + 2*32*(Dh+1))*4',
  defines: ATTN_DEFINES,
});
export const ATTENTION_COMBINE = kernel({
  file: 'attention',
  names: ['attention_combine'],
  args: { out: 'ptr', part: 'ptr', H: 'i32', Dh: 'i32', splits: 'i32' },
  launch: 'grid (T, H), block 128',
  defines: ATTN_DEFINES,
});

/** The leading parameters of the tensor-core decode and prefill kernels (same order in both .cu files). */
const PAGED_ATTENTION_ARGS = {
  out: 'ptr',
  q: 'ptr',
  kc: 'ptr',
  vc: 'ptr',
  positions: 'ptr',
  seqOfToken: 'ptr',
  pageTable: 'ptr',
  pageStride: 'i32',
  T: 'i32',
  H: 'i32',
  Hkv: 'i32',
  S: 'i32',
  scale: 'f32',
  vScale: 'f32',
} as const;

// ------------------------------------------------------------------ kernels/attention-decode.cu
export const ATTENTION_DECODE = kernel({
  file: 'attention-decode',
  names: ['attention_decode'],
  args: {
    ...PAGED_ATTENTION_ARGS,
    blocks: 'ptr',
    topk: 'i32',
    part: 'ptr',
  },
  launch: 'grid (T, Hkv, splits), block 128, dyn smem 2*64*2*(Dh+8)*2',
  defines: ['AD_DH', 'KV_FP8'],
});

// ------------------------------------------------------------------ kernels/attention-prefill.cu
export const ATTENTION_PREFILL = kernel({
  file: 'attention-prefill',
  names: ['attention_prefill'],
  args: { ...PAGED_ATTENTION_ARGS, blocks: 'ptr', topk: 'i32', nbw: 'i32' },
  launch:
    'grid (ceil(T/(64*FA_MW)), H/FA_HB), block 128*FA_HB, dyn smem (256 + (FA_MW-1)*FA_HB*128)*(Dh+8)*2 + FA_SPARSE*(64*FA_MW+1)*nbw*4',
  defines: ['FA_DH', 'FA_HB', 'FA_MW', 'KV_FP8', 'FA_SPARSE'],
});

// ------------------------------------------------------------------ kernels/attention-prefill-wg.cu
/** Compiled for sm_90a (kernel-cache.ts ARCH_SPECIFIC): wgmma exists on Hopper only. */
export const ATTENTION_PREFILL_WG = kernel({
  file: 'attention-prefill-wg',
  names: ['attention_prefill_wg'],
  args: { ...PAGED_ATTENTION_ARGS, blocks: 'ptr', topk: 'i32', nbw: 'i32' },
  launch:
    'grid (H, ceil(T/128)), block 256 (+32 with FA_WS), dyn smem 128*128*2 + 3*2*128*128*2 + FA_SPARSE*130*nbw*4',
  defines: ['FA_SPARSE', 'FA_WS'],
});

// ------------------------------------------------------------------ kernels/msa.cu
export const MSA_SELECT = kernel({
  file: 'msa',
  names: [...variants('msa_select_', TWO_TYPES), 'msa_select_b8', 'msa_select_f8'],
  args: {
    out: 'ptr',
    idxQ: 'ptr',
    idxK: 'ptr',
    positions: 'ptr',
    seqOfToken: 'ptr',
    pageTable: 'ptr',
    pageStride: 'i32',
    T: 'i32',
    Hi: 'i32',
    Di: 'i32',
    S: 'i32',
    topk: 'i32',
    initBlocks: 'i32',
    localBlocks: 'i32',
  },
  launch: 'grid (T, Hi), block 128, dyn smem for one row of block scores',
});

// ------------------------------------------------------------------ kernels/msa-score.cu
export const MSA_BLOCK_SCORES = kernel({
  file: 'msa-score',
  names: ['msa_block_scores'],
  args: {
    scores: 'ptr',
    idxQ: 'ptr',
    idxK: 'ptr',
    positions: 'ptr',
    seqOfToken: 'ptr',
    pageTable: 'ptr',
    pageStride: 'i32',
    t0: 'i32',
    nT: 'i32',
    Hi: 'i32',
    S: 'i32',
    tileRows: 'i32',
    topk: 'i32',
  },
  launch: 'grid (ceil(nT/tileRows), Hi, Z), block 128, dyn smem 2*64*(Di+8)*2',
  defines: ['MSA_DI', 'KV_FP8'],
});
export const MSA_TOPK = kernel({
  file: 'msa-score',
  names: ['msa_topk'],
  args: {
    out: 'ptr',
    scores: 'ptr',
    positions: 'ptr',
    pageStride: 'i32',
    t0: 'i32',
    nT: 'i32',
    T: 'i32',
    S: 'i32',
    topk: 'i32',
    initBlocks: 'i32',
    localBlocks: 'i32',
  },
  launch: 'grid (nT, Hi), block 128, dyn smem pageStride*5',
});
