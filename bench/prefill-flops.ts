/** FLOP counts of a prefill, shared by bench:gpu and bench:long-context so both quote one rate. */
import type { ModelConfig } from '../src/config/model-config.js';

/**
 * FLOPs of a causal prefill of T tokens (one sequence), logits for the last row only. Every
 * layer's attention counts as dense causal (as bench:gpu has always quoted it), so on MSA
 * layers past 16 blocks this overstates the work done.
 */
export function prefillFlops(cfg: ModelConfig, T: number): number {
  const { hiddenSize: D, headDim: Dh, numHeads: H, numKvHeads: Hkv } = cfg;
  const Di = cfg.sparse?.indexDim ?? 0;
  const K = cfg.numExpertsPerTok;
  const pairs = (T * (T + 1)) / 2;
  let perToken = 0;
  let attn = 0;
  for (let i = 0; i < cfg.numLayers; i++) {
    perToken += (2 * H * Dh + 2 * Hkv * Dh) * D;
    attn += 2 * 2 * H * Dh * pairs;
    if (cfg.sparseLayers[i]) {
      perToken += (Hkv * Di + Di) * D;
      attn += 2 * Hkv * Di * pairs;
    }
    perToken += cfg.moeLayers[i]
      ? cfg.numExperts * D + (K + 1) * 3 * D * cfg.moeIntermediateSize
      : 3 * D * cfg.denseIntermediateSize;
  }
  return 2 * perToken * T + attn + 2 * cfg.vocabSize * D;
}

/** FLOPs of one layer's dense causal attention over T tokens (QK^T and PV, causal half). */
export function causalAttentionFlops(T: number, H: number, Dh: number): number {
  return 2 * 2 * H * Dh * ((T * (T + 1)) / 2);
}
