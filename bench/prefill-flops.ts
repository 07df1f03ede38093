/** FLOP counts of a prefill, shared by bench:gpu and bench:long-context so both quote one rate. */
import type { ModelConfig } from '../src/config/model-config.js';

/**
 * FLOPs of a causal prefill of T tokens (one sequence), logits for the last row only: the
 * projections, dense MLPs, router, routed experts and shared expert as 2 FLOPs per
 * multiply-add, and attention as QK^T plus PV over the (query, key) pairs each layer attends.
 * Dense layers attend every causal pair. MSA layers attend the keys of each token's selection
 * (msaKeys), and their index branch scores q.k over every causal key only for tokens with more
 * candidate blocks than top-k (below that every block is selected and nothing is scored). Up to
 * session 6 the MSA layers counted as dense causal attention with every pair scored: the same
 * count at 2,048 tokens (the issue-12 baseline), 2.3% more than this one at 8,192.
 */
export function prefillFlops(cfg: ModelConfig, T: number): number {
  const { hiddenSize: D, headDim: Dh, numHeads: H, numKvHeads: Hkv } = cfg;
  const Di = cfg.sparse?.indexDim ?? 0;
  const K = cfg.numExpertsPerTok;
  const pairs = (T * (T + 1)) / 2;
  const msa = cfg.sparse ? msaPairs(T, cfg.sparse.blockSize, cfg.sparse.topkBlocks) : null;
  let perToken = 0;
  let attn = 0;
  for (let i = 0; i < cfg.numLayers; i++) {
    perToken += (2 * H * Dh + 2 * Hkv * Dh) * D;
    if (cfg.sparseLayers[i] && msa) {
      perToken += (Hkv * Di + Di) * D;
      attn += 2 * 2 * H * Dh * msa.attended + 2 * Hkv * Di * msa.scored;
    } else {
      attn += 2 * 2 * H * Dh * pairs;
    }
    perToken += cfg.moeLayers[i]
      ? cfg.numExperts * D + (K + 1) * 3 * D * cfg.moeIntermediateSize
      : 3 * D * cfg.denseIntermediateSize;
  }
  return 2 * perToken * T + attn + 2 * cfg.vocabSize * D;
}

/**
 * (query, key) pairs of an MSA layer over T causal tokens with blocks of S keys and top-k
 * selection, the token's own (local) block always among them: `attended`, token p sees all
 * p + 1 keys while it has at most topk blocks, else topk - 1 whole blocks and its own block's
 * p % S + 1; `scored`, the index branch's q.k pairs (every causal key of the tokens with more
 * than topk blocks).
 */
export function msaPairs(T: number, S: number, topk: number): { attended: number; scored: number } {
  let attended = 0;
  let scored = 0;
  for (let p = 0; p < T; p++) {
    const many = Math.floor(p / S) >= topk;
    attended += many ? (topk - 1) * S + (p % S) + 1 : p + 1;
    if (many) scored += p + 1;
  }
  return { attended, scored };
}

/** FLOPs of one layer's dense causal attention over T tokens (QK^T and PV, causal half). */
export function causalAttentionFlops(T: number, H: number, Dh: number): number {
  return 2 * 2 * H * Dh * ((T * (T + 1)) / 2);
}
