/**
 * The MoE token plan shared by every expert path (moe-ops.ts, moe-fp8.ts): workspace buffers,
 * moe.cu's count / tile-table / scatter kernels that group token slots by expert, and the
 * combine that sums each token's weighted expert outputs.
 */
import { letter, type CudaTensor } from './cuda-tensor.js';
import { launchKernel } from './kernel-launch.js';
import { MOE_COMBINE, MOE_COUNT, MOE_PLAN_BLOCK, MOE_SCAN, MOE_SCATTER } from './kernel-table.js';
import type { MoeGemmPath } from './moe-expert-gemm.js';
import { strideGrid, type OpContext } from './op-context.js';

/** Token rows per MoE tile: small at decode (few tokens per expert), larger for prefill. */
function tileRows(rows: number, experts: number): number {
  const perExpert = rows / Math.max(1, Math.min(experts, rows));
  return perExpert <= 16 ? 16 : perExpert <= 32 ? 32 : 64;
}

export interface MoePlan {
  readonly T: number;
  readonly D: number;
  readonly I: number;
  readonly E: number;
  readonly Kw: number;
  /** Token slots, T * Kw. */
  readonly n: number;
  readonly BT: number;
  readonly maxTiles: number;
  readonly mma: boolean;
  /** Workspace pointers. */
  readonly buf: Readonly<Record<(typeof BUFFERS)[number], number>>;
}

const BUFFERS = [
  'counts',
  'offsets',
  'cursor',
  'tileExpert',
  'tileStart',
  'numTiles',
  'perm',
  'slotRow',
  'act',
  'y',
] as const;

export function planMoe(
  ctx: OpContext,
  T: number,
  D: number,
  I: number,
  E: number,
  Kw: number,
  mma: boolean,
  path: MoeGemmPath,
  tileHeight?: number,
): MoePlan {
  const n = T * Kw;
  const BT = mma ? (tileHeight ?? tileRows(n, E)) : 1 << 30;
  // Each non-empty expert adds at most one partial tile, and at most min(E, n) are non-empty.
  const maxTiles = mma ? Math.ceil(n / BT) + Math.min(E, n) : E;
  const bytes: Record<(typeof BUFFERS)[number], number> = {
    counts: E * 4,
    offsets: (E + 1) * 4,
    cursor: E * 4,
    tileExpert: maxTiles * 4,
    tileStart: maxTiles * 4,
    numTiles: 4,
    perm: n * 4,
    slotRow: n * 4,
    act: n * I * (mma ? 2 : 4),
    // The per-expert path keeps gate|up [n, 2I] f32 here before the down output.
    y: n * (path === 'per-expert-cublas' ? Math.max(D, 2 * I) : D) * 4,
  };
  const buf = Object.fromEntries(
    BUFFERS.map((b) => [b, ctx.ws.get(`moe.${b}`, bytes[b])]),
  ) as MoePlan['buf'];
  return { T, D, I, E, Kw, n, BT, maxTiles, mma, buf };
}

// moe.cu's plan kernels (ctx.tuning.moeScan): the warp scan beat the serial one (session 8 W2,
// bench:gpu 3 + 1 bf16 decode graph step: 1.644 / 2.243 / 3.411 ms against serial's
// 1.656 / 2.256 / 3.421 at B = 1 / 8 / 32, 10-13 us per MoE layer). 'block' (the default)
// replaces count + scan + scatter and the counts memset by one kernel at decode: graph steps
// even to 1% faster (session 15, H100, both orders), three launches and a memset fewer per
// MoE layer on the eager path (prefill chunks, mixed steps).

/**
 * Slots (tokens x experts per token) up to which one block plans the MoE (moe_plan_block):
 * decode batches. Past it the grid-stride kernels spread the count and scatter over the GPU.
 */
export const PLAN_BLOCK_MAX_SLOTS = 2048;

/** Counts per expert, tile table, and the permutation of token slots grouped by expert. */
export function permute(ctx: OpContext, p: MoePlan, ids: number, first: number): void {
  const { buf: b, n, E } = p;
  if (ctx.tuning.moeScan === 'block' && n <= PLAN_BLOCK_MAX_SLOTS) {
    launchKernel(
      ctx,
      MOE_PLAN_BLOCK,
      'moe_plan_block',
      { grid: [1, 1, 1], block: [256, 1, 1], smem: 8 * E },
      {
        offsets: b.offsets,
        tileExpert: b.tileExpert,
        tileStart: b.tileStart,
        numTiles: b.numTiles,
        perm: b.perm,
        slotRow: b.slotRow,
        ids,
        n,
        first,
        E,
        BT: p.BT,
        maxTiles: p.maxTiles,
      },
    );
    return;
  }
  const slots = { grid: strideGrid(ctx, n), block: [256, 1, 1] } as const;
  ctx.dev.memsetAsync(b.counts, 0, E * 4);
  launchKernel(ctx, MOE_COUNT, 'moe_count', slots, { counts: b.counts, ids, n, first, E });
  launchKernel(
    ctx,
    MOE_SCAN,
    ctx.tuning.moeScan === 'serial' ? 'moe_scan' : 'moe_scan_warp',
    { grid: [1, 1, 1], block: [32, 1, 1] },
    {
      offsets: b.offsets,
      cursor: b.cursor,
      tileExpert: b.tileExpert,
      tileStart: b.tileStart,
      numTiles: b.numTiles,
      counts: b.counts,
      E,
      BT: p.BT,
      maxTiles: p.maxTiles,
    },
  );
  launchKernel(ctx, MOE_SCATTER, 'moe_scatter', slots, {
    perm: b.perm,
    slotRow: b.slotRow,
    cursor: b.cursor,
    offsets: b.offsets,
    ids,
    n,
    first,
    E,
  });
}

/** Columns one moe_combine block sums: 256 threads of 4 (moe.cu's combine). */
const COMBINE_BLOCK = 256;
const COMBINE_COLUMNS = 4 * COMBINE_BLOCK;

/** Each token's Kw expert outputs, weighted, summed into out (moe.cu's combine). */
export function combine(ctx: OpContext, xo: CudaTensor, p: MoePlan): void {
  launchKernel(
    ctx,
    MOE_COMBINE,
    `moe_combine_${letter(xo, 'moe')}`,
    { grid: [p.T, Math.ceil(p.D / COMBINE_COLUMNS), 1], block: [COMBINE_BLOCK, 1, 1] },
    { out: xo.ptr, y: p.buf.y, slotRow: p.buf.slotRow, Kw: p.Kw, D: p.D },
  );
}
