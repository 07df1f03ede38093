/**
 * MSA block selections of a whole-model forward, GPU against the CPU, told apart into real
 * differences and near-ties (issue 12's "identical selected blocks where the index scores are
 * not tied"). Both backends' `msaSelect` calls are recorded with their inputs (index queries and
 * the index-key cache as each backend holds them); a row (index head, token) whose chosen set
 * differs is a tie when every block the GPU swapped in or out scores, on the CPU's inputs,
 * within twice the largest score difference between the two backends' inputs of that row
 * (the host recomputes both in f64), or within 2e-5 of the row's score scale (the kernels' own
 * f32 rounding, when both ran on the same inputs). With `force`, the GPU's tied rows are overwritten with the
 * CPU's choice before its attention reads them, so the rest of the forward can be held to the
 * plain per-position bound: a flipped near-tie changes a token's hidden state, which later
 * layers read through its K/V, so excluding only the flipped positions would not be enough.
 * Assumes the forward is one prefill from position 0 over an identity page table (runForward).
 */
import type { Backend, BatchMeta, MsaOptions } from '../../src/backend/backend.js';
import type { CudaTensor } from '../../src/backend/cuda/cuda-tensor.js';
import { F8E4M3_TABLE } from '../../src/tensor/dtype.js';
import type { Tensor } from '../../src/tensor/tensor.js';

/** One msaSelect call: index queries [T, Hi·Di], index keys in token order [≥T, Di], ids [Hi, T, topk]. */
export interface MsaCall {
  readonly idxQ: Float32Array;
  readonly keys: Float32Array;
  readonly ids: Int32Array;
  readonly numHeads: number;
  readonly dim: number;
  readonly topk: number;
  readonly block: number;
}

export interface TieCount {
  /** Rows whose chosen sets differ with a score gap beyond the input error. */
  untied: number;
  /** Rows whose chosen sets differ only among near-tied blocks. */
  tied: number;
  /** Tokens with a tied differing row (any layer, any head). */
  readonly positions: Set<number>;
}

/** The index keys as `be` holds them, as f32 (an E4M3 CUDA cache is decoded on the host; scale 1). */
function readKeys(be: Backend, idxK: Tensor): Float32Array {
  if (be.name === 'cpu' || idxK.dtype !== 'f8e4m3') return be.readF32(idxK);
  const c = idxK as CudaTensor;
  const codes = new Uint8Array(c.numel);
  (be as unknown as { dev: { download(d: Uint8Array, p: unknown): void } }).dev.download(
    codes,
    c.ptr,
  );
  return Float32Array.from(codes, (b) => F8E4M3_TABLE[b]!);
}

/**
 * Runs `fn` with `be.msaSelect` wrapped: after each call, `hook` sees the call's record and the
 * output tensor (which it may rewrite before the step goes on).
 */
export async function withMsaHook<R>(
  be: Backend,
  hook: (call: MsaCall, out: Tensor) => void,
  fn: () => Promise<R>,
): Promise<R> {
  const target = be as unknown as { msaSelect: Backend['msaSelect'] };
  const orig = target.msaSelect;
  target.msaSelect = (out: Tensor, idxQ: Tensor, idxK: Tensor, meta: BatchMeta, o: MsaOptions) => {
    orig.call(be, out, idxQ, idxK, meta, o);
    const block = idxK.shape[1]!; // page size = MSA block (identity page table)
    hook(
      {
        idxQ: be.readF32(idxQ),
        keys: readKeys(be, idxK),
        ids: be.readI32(out),
        numHeads: o.numIndexHeads,
        dim: o.indexDim,
        topk: o.topk,
        block,
      },
      out,
    );
  };
  try {
    return await fn();
  } finally {
    target.msaSelect = orig;
  }
}

/** Block-max score of block b for token t of head h (keys j ≤ t of the block), in f64. */
function blockScore(c: MsaCall, h: number, t: number, b: number): number {
  const { dim: Di, numHeads: Hi } = c;
  const qOff = (t * Hi + h) * Di;
  let best = -Infinity;
  for (let j = b * c.block; j <= Math.min(t, (b + 1) * c.block - 1); j++) {
    let d = 0;
    for (let e = 0; e < Di; e++) d += c.idxQ[qOff + e]! * c.keys[j * Di + e]!;
    best = Math.max(best, d);
  }
  return best;
}

/** Whether row (h, t)'s differing choice is a near-tie on the CPU's scores. */
function isTie(g: MsaCall, c: MsaCall, h: number, t: number, onlyG: number[], onlyC: number[]) {
  if ([...onlyG, ...onlyC].some((b) => b < 0)) return false;
  const nb = Math.floor(t / c.block) + 1;
  // At least the f32 rounding of a kernel's dot products (about 1e-6 of the scores' scale).
  let err = 0;
  let scale = 0;
  for (let b = 0; b < nb; b++) {
    const sc = blockScore(c, h, t, b);
    err = Math.max(err, Math.abs(sc - blockScore(g, h, t, b)));
    scale = Math.max(scale, Math.abs(sc));
  }
  err = Math.max(err, 1e-5 * scale);
  const cpuBest = Math.max(...onlyC.map((b) => blockScore(c, h, t, b)));
  const cpuWorst = Math.min(...onlyG.map((b) => blockScore(c, h, t, b)));
  return cpuBest - cpuWorst <= 2 * err;
}

/**
 * A GPU-side hook comparing each call with the CPU's call of the same index (`cpuCalls`, in
 * call order) and counting into `count`; with `force`, tied rows take the CPU's ids.
 */
export function tieHook(
  gpu: Backend,
  cpuCalls: readonly MsaCall[],
  count: TieCount,
  force: boolean,
): (call: MsaCall, out: Tensor) => void {
  let n = 0;
  return (g, out) => {
    const c = cpuCalls[n++];
    if (!c || c.ids.length !== g.ids.length) throw new Error(`msa call ${n}: no matching CPU call`);
    const K = g.topk;
    const T = g.ids.length / (g.numHeads * K);
    const fixed = Int32Array.from(g.ids);
    let changed = false;
    for (let h = 0; h < g.numHeads; h++)
      for (let t = 0; t < T; t++) {
        const r = (h * T + t) * K;
        const a = new Set(g.ids.subarray(r, r + K));
        const b = new Set(c.ids.subarray(r, r + K));
        const onlyG = [...a].filter((x) => !b.has(x));
        const onlyC = [...b].filter((x) => !a.has(x));
        if (onlyG.length === 0 && onlyC.length === 0) continue;
        if (!isTie(g, c, h, t, onlyG, onlyC)) {
          count.untied++;
          continue;
        }
        count.tied++;
        count.positions.add(t);
        fixed.set(c.ids.subarray(r, r + K), r);
        changed = true;
      }
    if (force && changed) gpu.write(out, fixed);
  };
}

export const newTieCount = (): TieCount => ({ untied: 0, tied: 0, positions: new Set() });
