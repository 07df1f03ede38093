import type { ModelConfig } from '../../config/model-config.js';

/**
 * Maps a checkpoint tensor name to its canonical name (layout A, no VL prefix), or null for
 * tensors the text model does not use (MTP, vision tower, projector). See minimax-m3.md §2.9.
 */
export function canonicalName(raw: string, config: ModelConfig): string | null {
  const name = stripPrefix(raw);
  if (SKIPPED.some((p) => name.startsWith(p))) return null;
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(name);
  if (!m) return name;
  const layer = Number(m[1]);
  // DeepSeek-style checkpoints append MTP layers after the last decoder layer.
  if (layer >= config.numLayers) return null;
  return `model.layers.${layer}.${layerSuffix(m[2]!, config.moeLayers[layer] === true)}`;
}

/** The raw name of the scale companion of a quantized weight. */
export const SCALE_SUFFIX = '_scale_inv';

const SKIPPED = [
  'model.mtp.',
  'mtp.',
  'model.vision_tower.',
  'vision_tower.',
  'model.visual.',
  'visual.',
  'model.multi_modal_projector.',
  'multi_modal_projector.',
  'model.patch_merge_mlp.',
  'patch_merge_mlp.',
];

function stripPrefix(name: string): string {
  if (name.startsWith('model.language_model.')) return `model.${name.slice(21)}`;
  if (name.startsWith('language_model.')) return name.slice(15);
  return name;
}

const INDEXER = /^self_attn\.indexer\.(q_proj|k_proj|q_norm|k_norm)\.(.+)$/;
const EXPERT_B = /^mlp\.experts\.(\d+)\.(gate_proj|up_proj|down_proj)\.(.+)$/;
const EXPERT_W: Readonly<Record<string, string>> = {
  gate_proj: 'w1',
  up_proj: 'w3',
  down_proj: 'w2',
};

function layerSuffix(rest: string, isMoe: boolean): string {
  const idx = INDEXER.exec(rest);
  if (idx) return `self_attn.index_${idx[1]}.${idx[2]}`;
  // Layout B calls the MoE block `mlp` too; only MoE layers move to block_sparse_moe.
  if (!isMoe || !rest.startsWith('mlp.')) return rest;
  const ex = EXPERT_B.exec(rest);
  if (ex) return `block_sparse_moe.experts.${ex[1]}.${EXPERT_W[ex[2]!]}.${ex[3]}`;
  if (rest === 'mlp.gate.e_score_correction_bias')
    return 'block_sparse_moe.e_score_correction_bias';
  return `block_sparse_moe.${rest.slice(4)}`;
}
