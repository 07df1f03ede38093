import { describe, expect, it } from 'vitest';
import { parseModelConfig } from '../../config/model-config.js';
import { canonicalName } from './weight-layouts.js';

// Layer 0 dense, layers 1-2 MoE.
const config = parseModelConfig({
  model_type: 'minimax_m3',
  hidden_size: 8,
  num_hidden_layers: 3,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  vocab_size: 16,
  intermediate_size: 4,
  num_local_experts: 4,
  num_experts_per_tok: 2,
  moe_layer_freq: [0, 1, 1],
});

describe('canonicalName', () => {
  const cases: [string, string | null][] = [
    // layout A passes through
    [
      'model.layers.1.block_sparse_moe.experts.3.w1.weight',
      'model.layers.1.block_sparse_moe.experts.3.w1.weight',
    ],
    [
      'model.layers.2.self_attn.index_q_proj.weight',
      'model.layers.2.self_attn.index_q_proj.weight',
    ],
    ['lm_head.weight', 'lm_head.weight'],
    // layout B on MoE layers
    [
      'model.layers.1.mlp.experts.3.gate_proj.weight',
      'model.layers.1.block_sparse_moe.experts.3.w1.weight',
    ],
    [
      'model.layers.1.mlp.experts.3.up_proj.weight',
      'model.layers.1.block_sparse_moe.experts.3.w3.weight',
    ],
    [
      'model.layers.1.mlp.experts.3.down_proj.weight',
      'model.layers.1.block_sparse_moe.experts.3.w2.weight',
    ],
    [
      'model.layers.1.mlp.experts.3.down_proj.weight_scale_inv',
      'model.layers.1.block_sparse_moe.experts.3.w2.weight_scale_inv',
    ],
    ['model.layers.2.mlp.gate.weight', 'model.layers.2.block_sparse_moe.gate.weight'],
    [
      'model.layers.2.mlp.e_score_correction_bias',
      'model.layers.2.block_sparse_moe.e_score_correction_bias',
    ],
    [
      'model.layers.2.mlp.gate.e_score_correction_bias',
      'model.layers.2.block_sparse_moe.e_score_correction_bias',
    ],
    [
      'model.layers.2.mlp.shared_experts.up_proj.weight',
      'model.layers.2.block_sparse_moe.shared_experts.up_proj.weight',
    ],
    [
      'model.layers.2.self_attn.indexer.k_norm.weight',
      'model.layers.2.self_attn.index_k_norm.weight',
    ],
    [
      'model.layers.2.self_attn.indexer.q_proj.weight',
      'model.layers.2.self_attn.index_q_proj.weight',
    ],
    // a dense layer keeps mlp.gate_proj in both layouts
    ['model.layers.0.mlp.gate_proj.weight', 'model.layers.0.mlp.gate_proj.weight'],
    [
      'model.layers.0.mlp.down_proj.weight_scale_inv',
      'model.layers.0.mlp.down_proj.weight_scale_inv',
    ],
    // VL prefixes
    [
      'model.language_model.layers.1.mlp.experts.0.up_proj.weight',
      'model.layers.1.block_sparse_moe.experts.0.w3.weight',
    ],
    ['model.language_model.embed_tokens.weight', 'model.embed_tokens.weight'],
    ['language_model.model.norm.weight', 'model.norm.weight'],
    ['language_model.lm_head.weight', 'lm_head.weight'],
    // skipped
    ['model.mtp.layers.0.eh_proj.weight', null],
    ['mtp.layers.0.enorm.weight', null],
    ['model.vision_tower.blocks.0.attn.qkv.weight', null],
    ['model.multi_modal_projector.linear_1.weight', null],
    ['model.layers.3.self_attn.q_proj.weight', null],
  ];
  for (const [raw, want] of cases) {
    it(`${raw} -> ${want}`, () => expect(canonicalName(raw, config)).toBe(want));
  }
});
