/** HF-style config.json objects for `moeserve init-random`. */
export type RawConfig = Record<string, unknown>;

const ones = (n: number, dense: number): number[] =>
  Array.from({ length: n }, (_, i) => (i < dense ? 0 : 1));

/** The MiniMax-M3 text model (minimax-m3.md §1.1): 60 layers, the first 3 dense. */
function minimaxM3(): RawConfig {
  return {
    architectures: ['MiniMaxM3SparseForCausalLM'],
    model_type: 'minimax_m3',
    hidden_size: 6144,
    num_hidden_layers: 60,
    num_attention_heads: 64,
    num_key_value_heads: 4,
    head_dim: 128,
    vocab_size: 200064,
    max_position_embeddings: 524288,
    rope_theta: 5000000.0,
    rotary_dim: 64,
    partial_rotary_factor: 0.5,
    rms_norm_eps: 1e-6,
    use_gemma_norm: true,
    use_qk_norm: true,
    qk_norm_type: 'per_head',
    attention_output_gate: false,
    hidden_act: 'swigluoai',
    swiglu_alpha: 1.702,
    swiglu_limit: 7.0,
    tie_word_embeddings: false,
    dense_intermediate_size: 12288,
    intermediate_size: 3072,
    shared_intermediate_size: 3072,
    n_shared_experts: 1,
    num_local_experts: 128,
    num_experts_per_tok: 4,
    scoring_func: 'sigmoid',
    use_routing_bias: true,
    routed_scaling_factor: 2.0,
    moe_layer_freq: ones(60, 3),
    num_mtp_modules: 1,
    torch_dtype: 'bfloat16',
    eos_token_id: 200020,
    sparse_attention_config: sparseConfig(128, 4, 16, 128, ones(60, 3)),
  };
}

/** Same shapes as the golden tiny-moe case (hidden 64, 8 experts top-2, MSA block 4). */
function tiny(): RawConfig {
  return {
    ...minimaxM3(),
    hidden_size: 64,
    num_hidden_layers: 4,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 16,
    vocab_size: 256,
    max_position_embeddings: 4096,
    rotary_dim: 8,
    swiglu_limit: 2.0,
    dense_intermediate_size: 96,
    intermediate_size: 32,
    shared_intermediate_size: 32,
    num_local_experts: 8,
    num_experts_per_tok: 2,
    moe_layer_freq: ones(4, 1),
    num_mtp_modules: 0,
    eos_token_id: 255,
    sparse_attention_config: sparseConfig(16, 2, 2, 4, ones(4, 1)),
  };
}

function sparseConfig(
  indexDim: number,
  indexHeads: number,
  topk: number,
  block: number,
  freq: number[],
): RawConfig {
  return {
    use_sparse_attention: true,
    sparse_index_dim: indexDim,
    sparse_num_index_heads: indexHeads,
    sparse_topk_blocks: topk,
    sparse_block_size: block,
    sparse_init_block: 0,
    sparse_local_block: 1,
    sparse_score_type: 'max',
    sparse_attention_freq: freq,
    sparse_disable_index_value: freq,
  };
}

export const PRESETS: Readonly<Record<string, () => RawConfig>> = {
  'minimax-m3': minimaxM3,
  tiny,
};

const LAYER_ARRAYS = ['sparse_attention_freq', 'sparse_disable_index_value'];

/**
 * A copy of `raw` with `n` decoder layers. Per-layer lists keep their first entries and
 * repeat the last one when growing, so the presets keep their dense first layers.
 */
export function withNumLayers(raw: RawConfig, n: number): RawConfig {
  if (raw['model_type'] === 'minimax_m3_vl') {
    return { ...raw, text_config: withNumLayers(raw['text_config'] as RawConfig, n) };
  }
  const resize = (v: unknown): unknown =>
    Array.isArray(v) && v.length > 0
      ? Array.from({ length: n }, (_, i) => v[Math.min(i, v.length - 1)] as unknown)
      : v;
  const text: RawConfig = {
    ...raw,
    num_hidden_layers: n,
    moe_layer_freq: resize(raw['moe_layer_freq']),
  };
  const sparse = raw['sparse_attention_config'] as RawConfig | undefined;
  if (sparse) {
    const s: RawConfig = { ...sparse };
    for (const k of LAYER_ARRAYS) if (k in s) s[k] = resize(s[k]);
    text['sparse_attention_config'] = s;
  }
  return text;
}
