/**
 * Every CUDA kernel the backend launches, declared once (kernel-decl.ts): launch sites use
 * these through `launchKernel`, and test/kernels/kernel-decls.test.ts checks them against the
 * `.cu` sources. Argument names are the `.cu` parameter names.
 */
import { kernel, THREE_TYPES, TWO_TYPES, variants } from './kernel-decl.js';

export * from './attention-kernels.js';
export * from './gemm-kernels.js';

const B = ['b', 'f'] as const;
const TILE_ROWS = ['16', '32', '64'] as const;

// ------------------------------------------------------------------ kernels/elementwise.cu
export const EMBEDDING = kernel({
  file: 'elementwise',
  names: variants('embedding_', TWO_TYPES),
  args: { out: 'ptr', table: 'ptr', ids: 'ptr', D: 'i32' },
  launch: 'grid (T), block 256',
});
export const ADD = kernel({
  file: 'elementwise',
  names: variants('add_', THREE_TYPES),
  args: { out: 'ptr', a: 'ptr', b: 'ptr', n: 'i64' },
  launch: 'grid-stride over n, block 256',
});
export const ROPE = kernel({
  file: 'elementwise',
  names: variants('rope_', B),
  args: { x: 'ptr', pos: 'ptr', T: 'i32', H: 'i32', Dh: 'i32', R: 'i32', theta: 'f64' },
  launch: 'grid-stride over T*ceil(H/8)*(R/2), block 256',
});
export const WRITE_CACHE = kernel({
  file: 'elementwise',
  names: variants('write_cache_', TWO_TYPES),
  args: { cache: 'ptr', x: 'ptr', slots: 'ptr', W: 'i32' },
  launch: 'grid (T), block 256',
});
export const WRITE_CACHE_FP8 = kernel({
  file: 'elementwise',
  names: variants('write_cache_8', B),
  args: { cache: 'ptr', x: 'ptr', slots: 'ptr', W: 'i32', scale: 'f32' },
  launch: 'grid (T), block 256',
});
// ------------------------------------------------------------------ kernels/norm-rope-cache.cu
export const NORM_ROPE_CACHE_VARIANTS = ['bbb', 'bb8', 'bfb', 'bf8', 'fff', 'fbf'] as const;
export const NORM_ROPE_CACHE = kernel({
  file: 'norm-rope-cache',
  names: variants('norm_rope_cache_', NORM_ROPE_CACHE_VARIANTS),
  args: {
    q: 'ptr',
    k: 'ptr',
    v: 'ptr',
    qw: 'ptr',
    kw: 'ptr',
    kc: 'ptr',
    vc: 'ptr',
    pos: 'ptr',
    slots: 'ptr',
    Hq: 'i32',
    Hk: 'i32',
    Dh: 'i32',
    R: 'i32',
    theta: 'f64',
    eps: 'f32',
    kScale: 'f32',
    vScale: 'f32',
  },
  launch: 'grid (T), block 256, dyn smem (R + 8*Dh)*4',
});
export const SWIGLU = kernel({
  file: 'elementwise',
  names: variants('swiglu_', TWO_TYPES),
  args: { out: 'ptr', gu: 'ptr', M: 'i64', I: 'i32', alpha: 'f32', limit: 'f32' },
  launch: 'grid-stride over M*I, block 256',
});
export const GATHER_ROWS = kernel({
  file: 'elementwise',
  names: variants('gather_rows_', TWO_TYPES),
  args: { out: 'ptr', x: 'ptr', rows: 'ptr', D: 'i32' },
  launch: 'grid (R), block 256',
});
export const SPLIT_COLUMNS = kernel({
  file: 'elementwise',
  names: ['split_columns_b'],
  args: { out: 'ptr', in: 'ptr', M: 'i64', N: 'i32', Ntot: 'i32', off: 'i32' },
  launch: 'grid-stride over M*N/8, block 256',
});
export const CONVERT = kernel({
  file: 'elementwise',
  names: variants('convert_', TWO_TYPES),
  args: { out: 'ptr', in: 'ptr', n: 'i64' },
  launch: 'grid-stride over n, block 256',
});
export const FILL_RANDOM = kernel({
  file: 'elementwise',
  names: variants('fill_random_', B),
  args: { out: 'ptr', n: 'i64', seed: 'u32', scale: 'f32', offset: 'f32' },
  launch: 'grid-stride over n, block 256',
});

// ------------------------------------------------------------------ kernels/bf16x3.cu
export const SPLIT_BF16X3 = kernel({
  file: 'bf16x3',
  names: ['split_bf16x3'],
  args: { parts: 'ptr', stride: 'i64', w: 'ptr', n: 'i64' },
  launch: 'grid-stride over n, block 256',
});
export const SUM_BF16X3 = kernel({
  file: 'bf16x3',
  names: variants('sum_bf16x3_', B),
  args: { out: 'ptr', p: 'ptr', M: 'i64', N: 'i32' },
  launch: 'grid-stride over M*N, block 256',
});

// ------------------------------------------------------------------ kernels/norm.cu
export const RMSNORM_BLOCK = kernel({
  file: 'norm',
  names: variants('rmsnorm_block_', THREE_TYPES),
  args: { out: 'ptr', x: 'ptr', w: 'ptr', n: 'i32', eps: 'f32' },
  launch: 'grid (rows), block 256: one block per row (n >= 512)',
});
export const RMSNORM_WARP = kernel({
  file: 'norm',
  names: variants('rmsnorm_warp_', THREE_TYPES),
  args: { out: 'ptr', x: 'ptr', w: 'ptr', rows: 'i64', n: 'i32', eps: 'f32' },
  launch: 'grid (ceil(rows/8)), block 256: one warp per row (n < 512)',
});
export const ADD_RMSNORM_BLOCK = kernel({
  file: 'norm',
  names: variants('add_rmsnorm_block_', THREE_TYPES),
  args: { out: 'ptr', res: 'ptr', x: 'ptr', w: 'ptr', n: 'i32', eps: 'f32' },
  launch: 'grid (rows), block 256: one block per row (n >= 512)',
});
export const ADD_RMSNORM_WARP = kernel({
  file: 'norm',
  names: variants('add_rmsnorm_warp_', THREE_TYPES),
  args: { out: 'ptr', res: 'ptr', x: 'ptr', w: 'ptr', rows: 'i64', n: 'i32', eps: 'f32' },
  launch: 'grid (ceil(rows/8)), block 256: one warp per row (n < 512)',
});

// ------------------------------------------------------------------ kernels/router.cu
export const ROUTER_TOPK = kernel({
  file: 'router',
  names: variants('router_topk_', B),
  args: {
    ids: 'ptr',
    weights: 'ptr',
    logits: 'ptr',
    bias: 'ptr',
    T: 'i32',
    E: 'i32',
    K: 'i32',
    scale: 'f32',
    sharedId: 'i32',
  },
  launch: 'grid (ceil(T/8)), block 256: one warp per token, dyn smem 8*2*E*4',
});

// ------------------------------------------------------------------ kernels/moe.cu
export const MOE_COUNT = kernel({
  file: 'moe',
  names: ['moe_count'],
  args: { counts: 'ptr', ids: 'ptr', n: 'i32', first: 'i32', E: 'i32' },
  launch: 'grid-stride over n = T*Kw slots, block 256',
});
export const MOE_SCAN = kernel({
  file: 'moe',
  names: ['moe_scan', 'moe_scan_warp'],
  args: {
    offsets: 'ptr',
    cursor: 'ptr',
    tileExpert: 'ptr',
    tileStart: 'ptr',
    numTiles: 'ptr',
    counts: 'ptr',
    E: 'i32',
    BT: 'i32',
    maxTiles: 'i32',
  },
  launch: 'grid (1), block 32',
});
export const MOE_PLAN_BLOCK = kernel({
  file: 'moe',
  names: ['moe_plan_block'],
  args: {
    offsets: 'ptr',
    tileExpert: 'ptr',
    tileStart: 'ptr',
    numTiles: 'ptr',
    perm: 'ptr',
    slotRow: 'ptr',
    ids: 'ptr',
    n: 'i32',
    first: 'i32',
    E: 'i32',
    BT: 'i32',
    maxTiles: 'i32',
  },
  launch: 'grid 1, block 256, dyn smem 8*E bytes; n <= PLAN_BLOCK_MAX_SLOTS',
});
export const MOE_SCATTER = kernel({
  file: 'moe',
  names: ['moe_scatter'],
  args: {
    perm: 'ptr',
    slotRow: 'ptr',
    cursor: 'ptr',
    offsets: 'ptr',
    ids: 'ptr',
    n: 'i32',
    first: 'i32',
    E: 'i32',
  },
  launch: 'grid-stride over n, block 256',
});
const MOE_TILES = {
  offsets: 'ptr',
  tileExpert: 'ptr',
  tileStart: 'ptr',
  numTiles: 'ptr',
} as const;
export const MOE_MMA_GU = kernel({
  file: 'moe',
  names: variants('moe_mma_gu_', TILE_ROWS),
  args: {
    W: 'ptr',
    x: 'ptr',
    perm: 'ptr',
    Kw: 'i32',
    ...MOE_TILES,
    D: 'i32',
    I: 'i32',
    act: 'ptr',
    alpha: 'f32',
    limit: 'f32',
  },
  launch: 'grid (ceil(I/64), maxTiles), block 128, dyn smem STAGES*(2*64+BT)*PITCH*2',
});
export const MOE_MMA_DOWN = kernel({
  file: 'moe',
  names: variants('moe_mma_down_', TILE_ROWS),
  args: {
    W: 'ptr',
    act: 'ptr',
    perm: 'ptr',
    Kw: 'i32',
    ...MOE_TILES,
    I: 'i32',
    D: 'i32',
    y: 'ptr',
    rw: 'ptr',
  },
  launch: 'grid (ceil(D/64), maxTiles), block 128, dyn smem STAGES*(64+BT)*PITCH*2',
});
export const MOE_GU_SCALAR = kernel({
  file: 'moe',
  names: variants('moe_gu_scalar_', TWO_TYPES),
  args: {
    W: 'ptr',
    x: 'ptr',
    perm: 'ptr',
    Kw: 'i32',
    offsets: 'ptr',
    E: 'i32',
    D: 'i32',
    I: 'i32',
    act: 'ptr',
    alpha: 'f32',
    limit: 'f32',
  },
  launch: 'grid (ceil(I/8), rows), block 256: one warp per output',
});
export const MOE_DOWN_SCALAR = kernel({
  file: 'moe',
  names: variants('moe_down_scalar_', B),
  args: {
    W: 'ptr',
    act: 'ptr',
    perm: 'ptr',
    offsets: 'ptr',
    E: 'i32',
    I: 'i32',
    D: 'i32',
    y: 'ptr',
    rw: 'ptr',
  },
  launch: 'grid (ceil(D/8), rows), block 256: one warp per output',
});
export const MOE_COMBINE = kernel({
  file: 'moe',
  names: variants('moe_combine_', B),
  args: { out: 'ptr', y: 'ptr', slotRow: 'ptr', Kw: 'i32', D: 'i32' },
  launch: 'grid (T, ceil(D/1024)), block 256 (4 columns a thread)',
});

// ------------------------------------------------------------------ kernels/moe-expert-gemm.cu
export const MOE_GATHER_ROWS = kernel({
  file: 'moe-expert-gemm',
  names: ['moe_gather_rows'],
  args: { xs: 'ptr', x: 'ptr', perm: 'ptr', Kw: 'i32', D: 'i32' },
  launch: 'grid (n), block 128',
});
export const MOE_COMBINE_SCALED = kernel({
  file: 'moe-expert-gemm',
  names: variants('moe_combine_scaled_', B),
  args: { out: 'ptr', y: 'ptr', slotRow: 'ptr', rw: 'ptr', Kw: 'i32', D: 'i32' },
  launch: 'grid (T), block 256',
});
export const MOE_COMBINE_BF16Y = kernel({
  file: 'moe-expert-gemm',
  names: variants('moe_combine_bf16y_', B),
  args: { out: 'ptr', y: 'ptr', slotRow: 'ptr', rw: 'ptr', Kw: 'i32', D: 'i32' },
  launch: 'grid (T), block 256',
});

// ------------------------------------------------------------------ kernels/sampling.cu
export const SAMPLE_ROWS = kernel({
  file: 'sampling',
  names: ['sample_rows'],
  args: {
    rows: 'ptr',
    logits: 'ptr',
    V: 'i32',
    outIds: 'ptr',
    outLogprob: 'ptr',
    outTopIds: 'ptr',
    outTopLogprob: 'ptr',
  },
  launch: 'grid (sampled rows), block 1024, no dynamic smem (gpu-sampler.ts)',
});

// ------------------------------------------------------------------ kernels/weights.cu
export const COUNT_NONFINITE = kernel({
  file: 'weights',
  names: variants('count_nonfinite_', B),
  args: { x: 'ptr', n: 'i64', count: 'ptr' },
  launch: 'grid-stride over n, block 256 (cuda-weight-uploader.ts)',
});

// ------------------------------------------------------------------ kernels/allreduce.cu
const IPC_ARGS = { peers: 'ptr', rank: 'i32', W: 'i32', cap: 'i64' } as const;
const IPC_COPY = { out: 'ptr', ...IPC_ARGS, n: 'i64', vec: 'i32' } as const;
const IPC_GRID = 'grid (min(maxBlocks, ceil(packs/512))), block 512 (ipc-layout.ts maxBlocks)';
export const AR_ONESHOT = kernel({
  file: 'allreduce',
  names: variants('ar_oneshot_', B),
  args: IPC_COPY,
  launch: IPC_GRID,
});
export const AR_TWOSHOT = kernel({
  file: 'allreduce',
  names: variants('ar_twoshot_', B),
  args: IPC_COPY,
  launch: IPC_GRID,
});
export const IPC_ALL_GATHER = kernel({
  file: 'allreduce',
  names: variants('all_gather_', B),
  args: IPC_COPY,
  launch: IPC_GRID,
});
export const IPC_REDUCE_SCATTER = kernel({
  file: 'allreduce',
  names: variants('reduce_scatter_', B),
  args: IPC_COPY,
  launch: IPC_GRID,
});
export const IPC_BROADCAST = kernel({
  file: 'allreduce',
  names: variants('broadcast_', B),
  args: { ...IPC_COPY, root: 'i32' },
  launch: IPC_GRID,
});
const AR_ADD_RMS_ARGS = {
  out: 'ptr',
  res: 'ptr',
  w: 'ptr',
  ...IPC_ARGS,
  rows: 'i64',
  n: 'i32',
  eps: 'f32',
} as const;
export const AR_ADD_RMSNORM_BLOCK = kernel({
  file: 'allreduce',
  names: variants('ar_add_rmsnorm_block_', THREE_TYPES),
  args: AR_ADD_RMS_ARGS,
  launch: 'grid (min(maxBlocks, rows)), block 256 (n >= 512)',
});
export const AR_ADD_RMSNORM_WARP = kernel({
  file: 'allreduce',
  names: variants('ar_add_rmsnorm_warp_', THREE_TYPES),
  args: AR_ADD_RMS_ARGS,
  launch: 'grid (min(maxBlocks, ceil(rows/8))), block 256 (n < 512)',
});
export const AR_ADD_RMSNORM_ROWS = kernel({
  file: 'allreduce',
  names: variants('ar_add_rmsnorm_rows_', THREE_TYPES),
  args: AR_ADD_RMS_ARGS,
  launch: 'grid (rows), block 256, between two ipc_barrier launches (n >= 512)',
});
export const IPC_BARRIER = kernel({
  file: 'allreduce',
  names: ['ipc_barrier'],
  args: IPC_ARGS,
  launch: 'grid (1), block 32',
});
export const GEMM_RS_REDUCE = kernel({
  file: 'allreduce',
  names: variants('gemm_rs_reduce_', B),
  args: { out: 'ptr', self: 'ptr', ...IPC_ARGS, n: 'i64', vec: 'i32' },
  launch: `${IPC_GRID}, after the pushes (gemm-reduce-scatter.ts)`,
});

// ------------------------------------------------------------------ kernels/fp8-gemm.cu
const FP8_FLAVOURS = ['blk', 'mx'] as const;
export const FP8_DEQUANT = kernel({
  file: 'fp8-gemm',
  names: [...variants('fp8_dequant_b_', FP8_FLAVOURS), ...variants('fp8_dequant_f_', FP8_FLAVOURS)],
  args: { out: 'ptr', W: 'ptr', S: 'ptr', n: 'i64', K: 'i32', G: 'i32' },
  launch: 'grid-stride over n, block 256',
});
export const FP8_EMBEDDING = kernel({
  file: 'fp8-gemm',
  names: [
    ...variants('fp8_embedding_b_', FP8_FLAVOURS),
    ...variants('fp8_embedding_f_', FP8_FLAVOURS),
  ],
  args: { out: 'ptr', W: 'ptr', S: 'ptr', G: 'i32', ids: 'ptr', D: 'i32' },
  launch: 'grid (T), block 256',
});
export const FP8_QUANTIZE = kernel({
  file: 'fp8-gemm',
  names: ['fp8_quantize_blk_b'],
  args: { codes: 'ptr', S: 'ptr', w: 'ptr', N: 'i32', K: 'i32' },
  launch: 'grid (ceil(K/128), ceil(N/128)), block 256',
});
export const W8A8_QUANT = kernel({
  file: 'fp8-w8a8',
  names: ['w8a8_quant_b'],
  args: {
    codes: 'ptr',
    S: 'ptr',
    x: 'ptr',
    M: 'i32',
    K: 'i32',
    pitch: 'i32',
    offsets: 'ptr',
    poffsets: 'ptr',
    E: 'i32',
  },
  launch: 'grid (M), block 128',
});
export const W8A8_PAD_ROWS = kernel({
  file: 'fp8-w8a8',
  names: ['w8a8_pad_rows'],
  args: { out: 'ptr', rows: 'ptr', n: 'i32', offsets: 'ptr', poffsets: 'ptr', E: 'i32' },
  launch: 'grid-stride over n, block 256',
});
export const W8A8_WSCALES_BLK = kernel({
  file: 'fp8-w8a8',
  names: ['w8a8_wscales_blk'],
  args: { out: 'ptr', S: 'ptr', N: 'i32', Kb: 'i32', kbp: 'i32', mats: 'i32', bad: 'ptr' },
  launch: 'grid-stride over mats*ceil(N/128)*Kb, block 256',
});
export const W8A8_WSCALES_VEC = kernel({
  file: 'fp8-w8a8',
  names: ['w8a8_wscales_vec'],
  args: { out: 'ptr', S: 'ptr', N: 'i32', Kb: 'i32', mats: 'i32' },
  launch: 'grid-stride over mats*N*Kb, block 256',
});
