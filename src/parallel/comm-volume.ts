import type { ModelConfig } from '../config/model-config.js';
import type { LayerPlacement } from './allreduce-placement.js';
import { chunkRange, type CollectiveOp } from './comm-stats.js';
import { planDispatch } from './expert-dispatch.js';
import {
  tokenShard,
  usesExpertParallel,
  usesSequenceParallel,
  type ParallelLayout,
} from './parallel-layout.js';

/**
 * The analytic communication of one forward step: every collective one rank issues, in
 * order, with the payload bytes it sends. Per rank and collective, with W ranks and n the
 * elements of the input:
 *   all-reduce     n − n_r + (W−1)·n_r  (direct reduce-scatter + all-gather; n_r = own chunk;
 *                  2(W−1)·n over all ranks)
 *   all-gather     (W−1)·n
 *   reduce-scatter (W−1)·n/W  (n = the [W·rows] input)
 *   all-to-all     the rows sent to other ranks × row size
 * Per layer that is 2 all-reduces of T·D (TP), or all-gather + reduce-scatter of ⌈T/W⌉·D per
 * sub-layer (SP: the same volume on W·⌈T/W⌉ rows); an EP MoE layer adds the dispatch and
 * combine all-to-alls, whose sizes depend on the routing.
 */
export interface ExpectedCollective {
  /** Layer whose sub-layer issues it, or 'head' (LM head) / 'routes' (routed-id capture). */
  readonly layer: number | 'head';
  readonly op: CollectiveOp;
  readonly elems: number;
  readonly bytesSent: number;
}

export interface StepShape {
  readonly numTokens: number;
  readonly numLogitRows: number;
  /** Bytes per activation element moved (4 on the CPU backend, 2 for bf16 on GPUs). */
  readonly elemBytes: number;
  /** Routed ids [T, K'] per MoE layer: needed for EP all-to-all sizes. */
  readonly routes?: Readonly<Record<string, Int32Array>>;
  /** The step captures routed experts (SP + EP then all-gathers the ids). */
  readonly captureRoutes?: boolean;
}

export function expectedCollectives(
  cfg: ModelConfig,
  p: ParallelLayout,
  placement: readonly LayerPlacement[],
  s: StepShape,
): ExpectedCollective[] {
  const W = p.tpSize;
  if (W === 1) return [];
  const r = p.tpRank;
  const D = cfg.hiddenSize;
  const T = s.numTokens;
  const sp = usesSequenceParallel(p);
  const rows = sp ? Math.ceil(T / W) : T;
  const out: ExpectedCollective[] = [];
  const add = (
    layer: number | 'head',
    op: CollectiveOp,
    elems: number,
    bytesSent: number,
  ): void => {
    out.push({ layer, op, elems, bytesSent });
  };
  const allReduce = (layer: number | 'head', n: number): void => {
    const [a, b] = chunkRange(n, W, r);
    add(layer, 'allReduce', n, (n - (b - a) + (W - 1) * (b - a)) * s.elemBytes);
  };
  const gatherScatter = (layer: number): void => {
    add(layer, 'allGather', rows * D, (W - 1) * rows * D * s.elemBytes);
    add(layer, 'reduceScatter', W * rows * D, (W - 1) * rows * D * s.elemBytes);
  };
  let pendingFrom = -1;
  placement.forEach((pl, i) => {
    if (pendingFrom >= 0) allReduce(pendingFrom, T * D);
    pendingFrom = -1;
    if (sp) gatherScatter(i);
    else allReduce(i, T * D);
    const ep = cfg.moeLayers[i] === true && usesExpertParallel(p);
    if (ep) expertAllToAll(cfg, p, s, i, rows, add);
    if (sp) {
      if (!ep) gatherScatter(i);
    } else if (pl.reduction === 'deferred') pendingFrom = i;
    else allReduce(i, T * D);
  });
  if (pendingFrom >= 0) allReduce(pendingFrom, T * D);
  if (sp) add('head', 'allGather', rows * D, (W - 1) * rows * D * s.elemBytes);
  const lmElems = s.numLogitRows * (cfg.vocabSize / W);
  add('head', 'allGather', lmElems, (W - 1) * lmElems * 4);
  return out;
}

/** The collectives of one EP MoE layer on rank p.tpRank (optional id capture, then 5 all-to-alls). */
function expertAllToAll(
  cfg: ModelConfig,
  p: ParallelLayout,
  s: StepShape,
  layer: number,
  rows: number,
  add: (layer: number, op: CollectiveOp, elems: number, bytesSent: number) => void,
): void {
  const W = p.tpSize;
  const r = p.tpRank;
  const D = cfg.hiddenSize;
  const ids = s.routes?.[String(layer)];
  if (!ids) throw new Error(`comm volume: the routes of EP layer ${layer} are needed`);
  const width = ids.length / s.numTokens;
  if (usesSequenceParallel(p) && s.captureRoutes)
    add(layer, 'allGather', rows * width, (W - 1) * rows * width * 4);
  const m = dispatchMatrix(ids, width, s.numTokens, cfg.numExperts / W, W);
  const sendOut = m[r]!.reduce((a, v, q) => a + (q === r ? 0 : v), 0);
  const recvIn = m.reduce((a, row, q) => a + (q === r ? 0 : row[r]!), 0);
  const sent = m[r]!.reduce((a, v) => a + v, 0);
  const received = m.reduce((a, row) => a + row[r]!, 0);
  add(layer, 'allToAll', W, (W - 1) * 4);
  add(layer, 'allToAll', sent * D, sendOut * D * s.elemBytes);
  add(layer, 'allToAll', sent * width, sendOut * width * 4);
  add(layer, 'allToAll', sent * width, sendOut * width * 4);
  add(layer, 'allToAll', received * D, recvIn * D * s.elemBytes);
}

/** rows[src][dst]: how many of rank src's own tokens go to rank dst (one copy per rank). */
export function dispatchMatrix(
  ids: Int32Array,
  width: number,
  numTokens: number,
  expertsPerRank: number,
  W: number,
): number[][] {
  return Array.from({ length: W }, (_, src) => {
    const sh = tokenShard(numTokens, W, src);
    const own = ids.subarray(sh.start * width, (sh.start + sh.count) * width);
    return planDispatch(own, width, sh.count, expertsPerRank, W).sendRows;
  });
}

/** Σ bytes sent per layer (index) plus the LM head, over a list of collectives. */
export function bytesPerLayer(list: readonly ExpectedCollective[]): Map<number | 'head', number> {
  const m = new Map<number | 'head', number>();
  for (const c of list) m.set(c.layer, (m.get(c.layer) ?? 0) + c.bytesSent);
  return m;
}
