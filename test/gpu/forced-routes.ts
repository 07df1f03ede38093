/**
 * The CPU reference of a GPU forward whose routes flipped on near-tied router scores (issue
 * 14's group check). A flip is legitimate when the GPU's experts are, on the CPU's own scores,
 * within ROUTE_TIE of the CPU's top-K boundary (bf16 activations move the router's sigmoid
 * scores by up to ~1e-2); but the flipped token's new output then changes its keys and values
 * in every later layer, so later positions differ too (W1: one flip at layer 1 token 16 put
 * positions 16..23 of tp4 over the limit). The reference therefore runs the CPU forward with
 * the GPU's experts forced on exactly those rows, recomputing their weights from the CPU's own
 * scores (what routerTopK gives for that choice), and every other row left to the CPU. A flip
 * beyond ROUTE_TIE is not forced: it is counted as a mismatch, and the logits show it. MSA
 * block selections that flipped on near-tied index scores are forced the same way when the
 * GPU's selections and their inputs are given (forced-blocks.ts).
 */
import type { Backend, RouterOptions } from '../../src/backend/backend.js';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { loadModel } from '../../src/model/load-model.js';
import { runForward } from '../../src/model/run-forward.js';
import type { Tensor } from '../../src/tensor/tensor.js';
import { forceBlocks, type BlockFlip, type GpuSelections } from './forced-blocks.js';

/** Largest gap in biased sigmoid score (the CPU's K-th pick minus the GPU's pick) forced. */
export const ROUTE_TIE = 1e-2;

export interface RoutedForward {
  logits: number[][];
  routed_experts: Record<string, number[][]>;
}

/** One route row where the GPU and the CPU chose differently. */
export interface RouteFlip {
  readonly layer: string;
  readonly token: number;
  /** CPU score of its K-th expert minus the lowest CPU score among the GPU's experts. */
  readonly gap: number;
  readonly forced: boolean;
}

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

/**
 * The CPU (one rank, float32) forward of `ids` with the GPU's experts forced on its near-tied
 * route rows; `flips` lists every row that differed on the CPU's own choice.
 */
export async function cpuForwardForcing(
  caseDir: string,
  ids: readonly number[],
  gpu: RoutedForward,
  forcing = true,
  msa?: GpuSelections,
): Promise<{ ref: RoutedForward; flips: RouteFlip[]; blockFlips: BlockFlip[] }> {
  const backend = new CpuBackend();
  const flips: RouteFlip[] = [];
  const blockFlips: BlockFlip[] = [];
  if (forcing && msa) {
    let msaCall = 0;
    const select = backend.msaSelect.bind(backend);
    backend.msaSelect = (out, idxQ, idxK, meta, o) => {
      select(out, idxQ, idxK, meta, o);
      const call = msaCall++;
      const got = msa[call];
      if (!got) throw new Error(`forced blocks: the GPU made no MSA call ${call}`);
      const sel = backend.readI32(out);
      const S = idxK.shape[1]!;
      blockFlips.push(
        ...forceBlocks(sel, backend.readF32(idxQ), backend.readF32(idxK), got, o, S, call),
      );
      backend.write(out, sel);
    };
  }
  const layers = Object.keys(gpu.routed_experts).sort((a, b) => Number(a) - Number(b));
  let call = 0;
  const orig = backend.routerTopK.bind(backend);
  backend.routerTopK = (idsT, weightsT, logitsT, bias, o) => {
    orig(idsT, weightsT, logitsT, bias, o);
    const layer = layers[call++];
    const want = layer === undefined ? undefined : gpu.routed_experts[layer];
    if (forcing && layer !== undefined && want)
      force(backend, { idsT, weightsT, logitsT, bias, o }, want, layer, flips);
  };
  try {
    const model = await loadModel(caseDir, { backend });
    const r = await runForward(model, ids);
    return { ref: { logits: r.logits, routed_experts: r.routedExperts }, flips, blockFlips };
  } finally {
    backend.close();
  }
}

interface RouterCall {
  idsT: Tensor;
  weightsT: Tensor;
  logitsT: Tensor;
  bias: Tensor | null;
  o: RouterOptions;
}

/** Rewrites the rows of one routerTopK call where the GPU's choice is a near-tie. */
function force(
  b: Backend,
  c: RouterCall,
  want: readonly (readonly number[])[],
  layer: string,
  flips: RouteFlip[],
): void {
  if (c.o.sharedExpertId !== null)
    throw new Error('forced routes: a fused shared expert is not supported');
  const ids = b.readI32(c.idsT);
  const weights = b.readF32(c.weightsT);
  const logits = b.readF32(c.logitsT);
  const bias = c.bias ? b.readF32(c.bias) : null;
  const K = c.o.topK;
  const E = c.logitsT.shape[1]!;
  let changed = false;
  want.forEach((gpuRow, t) => {
    const cpuRow = Array.from(ids.subarray(t * K, (t + 1) * K));
    if ([...cpuRow].sort().join() === [...gpuRow].sort().join()) return;
    const s = (e: number): number => sigmoid(logits[t * E + e]!);
    const sel = (e: number): number => s(e) + (bias ? bias[e]! : 0);
    const gap = Math.min(...cpuRow.map(sel)) - Math.min(...gpuRow.map(sel));
    const forced = gap <= ROUTE_TIE;
    flips.push({ layer, token: t, gap, forced });
    if (!forced) return;
    // routerTopK's order (biased score, descending) and weights for the GPU's choice.
    const row = [...gpuRow].sort((x, y) => sel(y) - sel(x));
    const sum = row.reduce((a, e) => a + s(e), 0);
    row.forEach((e, j) => {
      ids[t * K + j] = e;
      weights[t * K + j] = (s(e) / sum) * c.o.scale;
    });
    changed = true;
  });
  if (changed) {
    b.write(c.idsT, ids);
    b.write(c.weightsT, weights);
  }
}
