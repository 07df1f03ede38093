import {
  ConfigError,
  layerFlags,
  layerKinds,
  num,
  optNum,
  optObject,
  type Json,
} from './config-fields.js';
import type { LayerPlan, ModelConfig, SparseAttentionConfig } from './model-config.js';

/**
 * The config dialect HF transformers 5.x writes for MiniMax-M3-VL (`MiniMaxM3VLTextConfig`,
 * `model_type` "minimax_m3_vl_text"): per-layer `layer_types` / `mlp_layer_types` lists, the
 * MSA settings as flat `index_*` fields, RoPE under `rope_parameters`, `dtype`, and
 * `hidden_act: "silu"` although the MLP is SwiGLU-OAI.
 */
export const HF_NATIVE_TEXT_TYPE = 'minimax_m3_vl_text';

/** `rope_parameters.rope_theta` when absent (the class's default theta). */
export const HF_NATIVE_ROPE_THETA = 5000000.0;

const ATTN_KINDS = { on: 'minimax_m3_sparse', off: 'full_attention' } as const;
const MLP_KINDS = { on: 'sparse', off: 'dense' } as const;

/** The flat MSA fields and the legacy `sparse_attention_config` keys they replace. */
const INDEX_FIELDS = [
  ['index_head_dim', 'sparse_index_dim', 'indexDim'],
  ['index_n_heads', 'sparse_num_index_heads', 'numIndexHeads'],
  ['index_topk_blocks', 'sparse_topk_blocks', 'topkBlocks'],
  ['index_block_size', 'sparse_block_size', 'blockSize'],
  ['index_local_blocks', 'sparse_local_block', 'localBlocks'],
] as const;

/**
 * MiniMaxM3VLTextConfig's class defaults: transformers fills a field it does not find with
 * these (and leaves out of config.json the fields that equal them), so a missing field means
 * this value, not moeserve's own default.
 */
export function hfNativeDefaults(): Json {
  return {
    vocab_size: 200064,
    hidden_size: 6144,
    intermediate_size: 3072,
    dense_intermediate_size: 12288,
    shared_intermediate_size: 3072,
    n_shared_experts: 1,
    num_hidden_layers: 60,
    num_attention_heads: 64,
    num_key_value_heads: 4,
    head_dim: 128,
    max_position_embeddings: 524288,
    rms_norm_eps: 1e-6,
    num_local_experts: 128,
    num_experts_per_tok: 4,
    routed_scaling_factor: 2.0,
    use_routing_bias: true,
    rotary_dim: 64,
    swiglu_alpha: 1.702,
    swiglu_limit: 7.0,
    index_n_heads: 4,
    index_head_dim: 128,
    index_block_size: 128,
    index_topk_blocks: 16,
    index_local_blocks: 1,
    tie_word_embeddings: false,
  };
}

/** Two statements of one fact must agree; the error names both fields. */
function agree<T>(a: T | undefined, b: T | undefined, what: string, where: string): T | undefined {
  if (a !== undefined && b !== undefined && JSON.stringify(a) !== JSON.stringify(b))
    throw new ConfigError(
      `${where}: ${what} disagree (${JSON.stringify(a)} vs ${JSON.stringify(b)})`,
    );
  return a ?? b;
}

/** Layer structure and MSA settings from `layer_types`, `mlp_layer_types` and `index_*`. */
export function parseHfNativeLayers(text: Json, numLayers: number, where: string): LayerPlan {
  // transformers still accepts the MiniMax keys as constructor arguments; when a config has
  // both spellings they must say the same thing.
  const legacy = optObject(text, 'sparse_attention_config', where) ?? {};
  const lw = `${where}.sparse_attention_config`;
  const moeLayers =
    agree(
      layerKinds(text, 'mlp_layer_types', numLayers, MLP_KINDS, where),
      layerFlags(text, 'moe_layer_freq', numLayers, where),
      'fields "mlp_layer_types" and "moe_layer_freq"',
      where,
    ) ?? new Array<boolean>(numLayers).fill(true);
  const sparseLayers =
    agree(
      layerKinds(text, 'layer_types', numLayers, ATTN_KINDS, where),
      layerFlags(legacy, 'sparse_attention_freq', numLayers, lw),
      'fields "layer_types" and "sparse_attention_config.sparse_attention_freq"',
      where,
    ) ?? new Array<boolean>(numLayers).fill(false);
  if (!sparseLayers.some(Boolean)) return { moeLayers, sparseLayers, sparse: null };
  const values: Record<string, number> = {};
  for (const [flat, old, key] of INDEX_FIELDS) {
    const range = key === 'localBlocks' ? 'non-negative-int' : 'positive-int';
    const a = num(text, flat, range, where);
    const b = legacy[old] === undefined ? undefined : num(legacy, old, range, lw);
    values[key] = agree(a, b, `fields "${flat}" and "sparse_attention_config.${old}"`, where)!;
  }
  const sparse: SparseAttentionConfig = {
    indexDim: values['indexDim']!,
    numIndexHeads: values['numIndexHeads']!,
    topkBlocks: values['topkBlocks']!,
    blockSize: values['blockSize']!,
    // transformers' indexer has no init blocks (only the local window is forced).
    initBlocks: optNum(legacy, 'sparse_init_block', 'non-negative-int', 0, lw),
    localBlocks: values['localBlocks']!,
    scoreType: 'max',
  };
  return { moeLayers, sparseLayers, sparse };
}

/**
 * The config.json transformers 5.x `save_pretrained` writes for this model (the VL wrapper
 * with a `minimax_m3_vl_text` text config), every field explicit. Parsing it gives back `c`
 * (with `isVl` and `dialect` set).
 */
export function toHfNativeConfig(c: ModelConfig): Json {
  if (c.sparse && c.sparse.initBlocks > 0) {
    throw new ConfigError(
      `sparse_init_block (${c.sparse.initBlocks}) has no field in the ${HF_NATIVE_TEXT_TYPE} dialect`,
    );
  }
  const s = c.sparse;
  const text: Json = {
    model_type: HF_NATIVE_TEXT_TYPE,
    vocab_size: c.vocabSize,
    hidden_size: c.hiddenSize,
    intermediate_size: c.moeIntermediateSize,
    dense_intermediate_size: c.denseIntermediateSize,
    shared_intermediate_size: c.sharedIntermediateSize,
    n_shared_experts: c.numSharedExperts,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    num_key_value_heads: c.numKvHeads,
    head_dim: c.headDim,
    hidden_act: 'silu',
    max_position_embeddings: c.maxPositionEmbeddings,
    rms_norm_eps: c.rmsNormEps,
    num_local_experts: c.numExperts,
    num_experts_per_tok: c.numExpertsPerTok,
    routed_scaling_factor: c.routedScalingFactor,
    use_routing_bias: c.useRoutingBias,
    rotary_dim: c.rotaryDim,
    swiglu_alpha: c.swigluAlpha,
    swiglu_limit: c.swigluLimit,
    layer_types: c.sparseLayers.map((x) => (x ? ATTN_KINDS.on : ATTN_KINDS.off)),
    mlp_layer_types: c.moeLayers.map((x) => (x ? MLP_KINDS.on : MLP_KINDS.off)),
    ...(s
      ? {
          index_n_heads: s.numIndexHeads,
          index_head_dim: s.indexDim,
          index_block_size: s.blockSize,
          index_topk_blocks: s.topkBlocks,
          index_local_blocks: s.localBlocks,
        }
      : {}),
    rope_parameters: {
      rope_type: 'default',
      rope_theta: c.ropeTheta,
      partial_rotary_factor: c.rotaryDim / c.headDim,
    },
    tie_word_embeddings: c.tieWordEmbeddings,
    num_mtp_modules: c.numMtpModules,
    dtype: c.torchDtype,
    ...(c.eosTokenIds.length > 0
      ? { eos_token_id: c.eosTokenIds.length === 1 ? c.eosTokenIds[0] : [...c.eosTokenIds] }
      : {}),
  };
  const out: Json = {
    architectures: ['MiniMaxM3VLForConditionalGeneration'],
    model_type: 'minimax_m3_vl',
    dtype: c.torchDtype,
    tie_word_embeddings: c.tieWordEmbeddings,
    text_config: text,
  };
  if (c.quantization.method !== 'none') {
    out['quantization_config'] = {
      quant_method: c.quantization.method,
      weight_block_size: [...c.quantization.blockSize],
      ...(c.quantization.method === 'fp8' ? { fmt: 'e4m3', activation_scheme: 'dynamic' } : {}),
    };
  }
  return out;
}
