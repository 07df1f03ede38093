import type { ModelConfig } from '../config/model-config.js';

/**
 * How one rank's share of the model is cut. tp = 1 is the whole model. Attention, the dense
 * MLP and the LM head are always tensor-parallel over the tp ranks; `ep` moves the routed
 * experts from intermediate-dimension splits to whole experts per rank, and `sp` keeps the
 * residual stream sharded by token between the sub-layers.
 */
export interface ParallelLayout {
  readonly tpRank: number;
  readonly tpSize: number;
  /** Expert parallelism: rank r holds experts [r·E/tp, (r+1)·E/tp) whole. */
  readonly ep?: boolean;
  /** Sequence parallelism (seed 001). */
  readonly sp?: boolean;
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

/** True when experts are split whole across ranks (EP with more than one rank). */
export function usesExpertParallel(p: ParallelLayout): boolean {
  return p.ep === true && p.tpSize > 1;
}

/** True when the residual stream is sharded by token (SP with more than one rank). */
export function usesSequenceParallel(p: ParallelLayout): boolean {
  return p.sp === true && p.tpSize > 1;
}

/** [first expert, count] this rank holds: all of them, or its EP share. */
export function expertRange(cfg: ModelConfig, p: ParallelLayout): [number, number] {
  if (!usesExpertParallel(p)) return [0, cfg.numExperts];
  return evenSplit(cfg.numExperts, p.tpRank, p.tpSize, 'num_local_experts (experts over ep ranks)');
}

/**
 * The token shard of `rank` when T tokens are cut into W shards of ⌈T/W⌉ rows (the last
 * ones padded; seed 001 / vLLM `sp_shard`): its first row, its real rows, and the shard size.
 */
export function tokenShard(
  T: number,
  W: number,
  rank: number,
): { start: number; count: number; size: number } {
  const size = Math.ceil(T / W);
  const start = rank * size;
  return { start, count: Math.max(0, Math.min(size, T - start)), size };
}

/** Checks a layout against a model before anything is loaded. */
export function validateLayout(cfg: ModelConfig, p: ParallelLayout): void {
  const tp = p.tpSize;
  if (!Number.isInteger(tp) || tp < 1) throw new Error(`tp must be a positive integer (got ${tp})`);
  evenSplit(cfg.numHeads, 0, tp, 'num_attention_heads');
  kvHeadRange(cfg, p);
  evenSplit(cfg.vocabSize, 0, tp, 'vocab_size');
  evenSplit(cfg.denseIntermediateSize, 0, tp, 'dense_intermediate_size');
  if (cfg.moeLayers.some((m) => m)) {
    if (tp > cfg.numExperts) throw new Error(`tp=${tp} exceeds the ${cfg.numExperts} experts`);
    if (usesExpertParallel(p)) expertRange(cfg, p);
    else evenSplit(cfg.moeIntermediateSize, 0, tp, 'intermediate_size (expert width)');
  }
}
