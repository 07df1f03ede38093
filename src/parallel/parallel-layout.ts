import type { ModelConfig } from '../config/model-config.js';

/** How one rank's share of the model is cut. tp = 1 is the whole model. */
export interface ParallelLayout {
  readonly tpRank: number;
  readonly tpSize: number;
}

export const SINGLE_RANK: ParallelLayout = { tpRank: 0, tpSize: 1 };

/** [start, count) of a dimension of `total` split evenly over `size` ranks. */
export function evenSplit(
  total: number,
  rank: number,
  size: number,
  what: string,
): [number, number] {
  if (total % size !== 0) throw new Error(`${what} (${total}) is not divisible by tp=${size}`);
  const n = total / size;
  return [rank * n, n];
}

/** The KV heads this rank holds: split while tp ≤ Hkv, one replicated head beyond. */
export function kvHeadRange(cfg: ModelConfig, p: ParallelLayout): [number, number] {
  if (p.tpSize <= cfg.numKvHeads)
    return evenSplit(cfg.numKvHeads, p.tpRank, p.tpSize, 'num_key_value_heads');
  if (p.tpSize % cfg.numKvHeads !== 0)
    throw new Error(
      `tp=${p.tpSize} must divide or be a multiple of num_key_value_heads=${cfg.numKvHeads}`,
    );
  return [Math.floor((p.tpRank * cfg.numKvHeads) / p.tpSize), 1];
}
