import type { ModelConfig } from '../config/model-config.js';
import {
  usesExpertParallel,
  usesSequenceParallel,
  type ParallelLayout,
} from './parallel-layout.js';

/**
 * Where each layer's FFN reduction happens (seed 000). `dense` (the default) defers only the
 * dense-MLP layers' all-reduce into the next layer's input norm (one reduce + residual add +
 * Gemma RMSNorm step); sparse-MoE layers reduce immediately, because the fused kernel's
 * residual arithmetic made MoE routing run away in the seed. `all` also defers the MoE
 * layers, `off` defers nothing.
 */
export type AllReduceFusion = 'off' | 'dense' | 'all';

export const ALLREDUCE_FUSION_MODES: readonly AllReduceFusion[] = ['off', 'dense', 'all'];

export type FfnReduction =
  /** One rank: nothing to reduce. */
  | 'none'
  /** All-reduce right after the FFN. */
  | 'immediate'
  /** All-reduce fused into the next layer's input norm (or the final norm). */
  | 'deferred'
  /** SP: all-gather before, reduce-scatter after the FFN. */
  | 'reduce-scatter'
  /** SP + EP MoE: the MoE consumes and returns its token shard (all-to-all inside). */
  | 'token-shard';

export interface LayerPlacement {
  readonly layer: number;
  readonly ffn: 'dense' | 'moe';
  readonly reduction: FfnReduction;
}

export function parseAllReduceFusion(s: string): AllReduceFusion {
  if ((ALLREDUCE_FUSION_MODES as readonly string[]).includes(s)) return s as AllReduceFusion;
  throw new Error(
    `--allreduce-fusion must be one of ${ALLREDUCE_FUSION_MODES.join(', ')} (got "${s}")`,
  );
}

/** The placement of every layer's FFN reduction for this model, layout and mode. */
export function planAllReducePlacement(
  cfg: ModelConfig,
  p: ParallelLayout,
  mode: AllReduceFusion,
): LayerPlacement[] {
  return cfg.moeLayers.map((moe, layer) => {
    const ffn = moe ? ('moe' as const) : ('dense' as const);
    let reduction: FfnReduction;
    if (p.tpSize === 1) reduction = 'none';
    else if (usesSequenceParallel(p))
      reduction = moe && usesExpertParallel(p) ? 'token-shard' : 'reduce-scatter';
    else if (mode === 'all' || (mode === 'dense' && !moe)) reduction = 'deferred';
    else reduction = 'immediate';
    return { layer, ffn, reduction };
  });
}

/** The table printed at start-up: one line per layer. */
export function formatPlacementTable(
  plan: readonly LayerPlacement[],
  p: ParallelLayout,
  mode: AllReduceFusion,
): string {
  const layout = [
    `tp=${p.tpSize}`,
    usesExpertParallel(p) ? 'ep' : '',
    usesSequenceParallel(p) ? 'sp' : '',
  ].filter(Boolean);
  const lines = [
    `FFN reduction placement (${layout.join(' ')}, --allreduce-fusion ${mode}):`,
    '  layer  ffn    reduction',
  ];
  for (const l of plan) {
    const where =
      l.reduction === 'deferred'
        ? `deferred into ${l.layer + 1 < plan.length ? `layer ${l.layer + 1} input norm` : 'final norm'}`
        : l.reduction;
    lines.push(`  ${String(l.layer).padStart(5)}  ${l.ffn.padEnd(5)}  ${where}`);
  }
  return lines.join('\n');
}
