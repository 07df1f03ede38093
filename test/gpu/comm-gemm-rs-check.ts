/**
 * GEMM + reduce-scatter (seed 001) with W ranks as W streams of one process on one GPU: the
 * communicator's matmulReduceScatter against one GEMM of all rows then reduceScatter, bit for
 * bit, at MiniMax-M3's o_proj and dense down_proj shapes (hidden 6144, K = 8192/W, 12288/W),
 * with SP padding (M not a multiple of W), small M, a tiny shape, the CPU definition, and
 * graph capture and replay. The threshold is set to 1 row so every case runs chunked. Run by
 * gpu-check.ts --only comm (processes: comm-child.ts's gemmRs job).
 */
import { CublasGemm } from '../../src/backend/cuda/cublas-gemm.js';
import type { KernelCache } from '../../src/backend/cuda/kernel-cache.js';
import { matmul, matmulRowInvariantFrom } from '../../src/backend/cuda/matmul-ops.js';
import type { Row } from './check-util.js';
import { streamGroup } from './comm-check.js';
import { bf16Pool, projections, runGemmRsCase, type GemmRsShape } from './gemm-rs-case.js';

/**
 * The cases at W ranks (name, shape, graph and CPU checks; `chunked`: whether the blocked path
 * must run, default yes). Blocks under 65 rows of a decode-kernel weight (bf16 up to 16 MB: o_proj
 * from W = 8, the tiny case) fall back to GEMM then reduce-scatter: the split-K decode kernel's
 * row bits depend on the row count (Backend.matmulRowInvariantFrom).
 */
export function gemmRsCases(W: number): {
  name: string;
  shape: GemmRsShape;
  graph?: boolean;
  cpu?: boolean;
  chunked?: boolean;
}[] {
  return [
    ...projections(W, 1024).map((p) => ({ name: `${p.name} M=1024`, shape: p.shape, graph: true })),
    // SP padding: M not a multiple of W (3001 rows: 1501, 751, 376 per block at 2, 4, 8).
    { name: 'o_proj M=3001', shape: { M: 3001, N: 6144, K: 8192 / W } },
    { name: 'down_proj M=4096', shape: { M: 4096, N: 6144, K: 12288 / W } },
    // Padded small M whose blocks (70 rows, the last 67) stay on the blocked path at every W.
    { name: `o_proj M=${70 * W - 3}`, shape: { M: 70 * W - 3, N: 6144, K: 8192 / W }, cpu: true },
    { name: 'o_proj M=100', shape: { M: 100, N: 6144, K: 8192 / W }, cpu: true, chunked: W < 8 },
    { name: 'tiny M=37 N=64 K=32', shape: { M: 37, N: 64, K: 32 }, cpu: true, chunked: false },
  ];
}

export const GEMM_RS_POOL = 6144 * 6144 + 1024;

export function checkGemmRsStreams(
  ranks: readonly number[],
  onRows?: (W: number, rows: Row[]) => void,
  kernels?: KernelCache,
): Row[] {
  const rows: Row[] = [];
  const pool = bf16Pool(GEMM_RS_POOL, 5);
  for (const W of ranks) {
    const cases = gemmRsCases(W);
    const maxBytes = Math.max(...cases.map((c) => Math.ceil(c.shape.M / W) * W * c.shape.N * 2));
    const at = rows.length;
    const g = streamGroup(W, maxBytes, kernels, { gemmRsMinRows: 1 });
    try {
      const local = g.ctxs.map((ctx, r) => {
        const gemm = new CublasGemm(ctx.dev);
        return {
          dev: ctx.dev,
          comm: g.comms[r]!,
          matmul: (
            o: Parameters<typeof matmul>[2],
            x: Parameters<typeof matmul>[3],
            w: Parameters<typeof matmul>[4],
          ) => matmul(ctx, gemm, o, x, w, true),
          rowInvariantFrom: (w: Parameters<typeof matmul>[4]) => matmulRowInvariantFrom(w, true),
        };
      });
      for (const c of cases)
        rows.push(
          ...gemmRsRows(`W=${W} ${c.name}`, runGemmRsCase(local, c.shape, pool, c), c.chunked),
        );
    } finally {
      g.close();
    }
    onRows?.(W, rows.slice(at));
  }
  return rows;
}

/** The rows of one case's result (shared with the process check). */
export function gemmRsRows(
  tag: string,
  r: ReturnType<typeof runGemmRsCase>,
  chunked = true,
): Row[] {
  const bits = (check: string, n: number): Row => ({
    check,
    value: `${n} bits differ`,
    limit: '0',
    pass: n === 0,
  });
  return [
    {
      ...bits(`GEMM-RS ${tag}: vs GEMM then reduce-scatter`, r.outBits),
      pass: r.outBits === 0 && r.chunked === chunked,
      ...(r.chunked === chunked
        ? {}
        : { value: `${r.chunked ? 'chunked' : 'not chunked'}, expected the other` }),
    },
    bits(`GEMM-RS ${tag}: chunk GEMMs vs one GEMM (partials)`, r.partialBits),
    ...(r.cpuBits !== undefined ? [bits(`GEMM-RS ${tag}: vs CPU definition`, r.cpuBits)] : []),
    ...(r.graphBits !== undefined
      ? [bits(`GEMM-RS ${tag}: graph, 2 replays on new inputs`, r.graphBits)]
      : []),
  ];
}
