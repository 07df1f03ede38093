import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  checkRange,
  ConfigError,
  eosIds,
  num,
  optBool,
  optNum,
  type Json,
} from './config-fields.js';
import {
  checkActivation,
  parseMinimaxLayers,
  parseQuant,
  parseRope,
  storageDtype,
  textPart,
} from './config-sections.js';
import { HF_NATIVE_ROPE_THETA, hfNativeDefaults, parseHfNativeLayers } from './hf-native-config.js';

export { ConfigError } from './config-fields.js';

/** MSA (sparse attention) settings; see docs/architecture.md and shared/design/minimax-m3.md §2.5. */
export interface SparseAttentionConfig {
  readonly indexDim: number;
  readonly numIndexHeads: number;
  /** Blocks each query attends to, the forced init and local blocks included. */
  readonly topkBlocks: number;
  readonly blockSize: number;
  readonly initBlocks: number;
  readonly localBlocks: number;
  readonly scoreType: 'max';
}

export type QuantMethod = 'none' | 'fp8' | 'mxfp8';

export interface QuantizationConfig {
  readonly method: QuantMethod;
  /** [block rows, block cols] of one scale: [128,128] for block FP8, [1,32] for MXFP8. */
  readonly blockSize: readonly [number, number];
}

/**
 * Which config.json dialect the text model was written in: MiniMax's own (`minimax_m3`,
 * `sparse_attention_config`, `moe_layer_freq`) or HF transformers 5.x `save_pretrained`
 * (`minimax_m3_vl_text`, `layer_types`, `mlp_layer_types`, flat `index_*`, `rope_parameters`).
 */
export type ConfigDialect = 'minimax' | 'hf-native';

/** The text model of a MiniMax-M3 checkpoint, in engine names. Frozen after parsing. */
export interface ModelConfig {
  readonly modelType: 'minimax_m3';
  /** True when the checkpoint is the VL wrapper (`minimax_m3_vl`); weights then carry a prefix. */
  readonly isVl: boolean;
  readonly dialect: ConfigDialect;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly vocabSize: number;
  readonly maxPositionEmbeddings: number;
  readonly ropeTheta: number;
  readonly rotaryDim: number;
  readonly rmsNormEps: number;
  readonly swigluAlpha: number;
  readonly swigluLimit: number;
  readonly tieWordEmbeddings: boolean;
  readonly denseIntermediateSize: number;
  readonly moeIntermediateSize: number;
  readonly sharedIntermediateSize: number;
  readonly numSharedExperts: number;
  readonly numExperts: number;
  readonly numExpertsPerTok: number;
  readonly routedScalingFactor: number;
  readonly useRoutingBias: boolean;
  /** Per layer: true = MoE FFN, false = dense MLP. */
  readonly moeLayers: readonly boolean[];
  /** Per layer: true = MSA sparse attention. All false without a sparse config. */
  readonly sparseLayers: readonly boolean[];
  readonly sparse: SparseAttentionConfig | null;
  readonly numMtpModules: number;
  readonly torchDtype: string;
  readonly quantization: QuantizationConfig;
  /** EOS ids from config / generation_config (may be empty). */
  readonly eosTokenIds: readonly number[];
}

/** The per-layer structure and MSA settings, whichever dialect states them. */
export interface LayerPlan {
  readonly moeLayers: boolean[];
  readonly sparseLayers: boolean[];
  readonly sparse: SparseAttentionConfig | null;
}

/** Parses a HF config.json object (text or VL wrapper, either dialect) into a validated ModelConfig. */
export function parseModelConfig(top: Json, where = 'config.json'): ModelConfig {
  const { text: raw, isVl, dialect, w } = textPart(top, where);
  // transformers drops fields equal to its class defaults when saving; read them back.
  const text = dialect === 'hf-native' ? { ...hfNativeDefaults(), ...dropNulls(raw) } : raw;
  checkActivation(text, dialect, w);
  const numLayers = num(text, 'num_hidden_layers', 'positive-int', w);
  const numHeads = num(text, 'num_attention_heads', 'positive-int', w);
  const hiddenSize = num(text, 'hidden_size', 'positive-int', w);
  const vocabSize = num(text, 'vocab_size', 'positive-int', w);
  // Without head_dim, hidden_size / num_attention_heads must itself be a valid head_dim.
  const headDim = checkRange(
    optNum(text, 'head_dim', 'positive-int', hiddenSize / numHeads, w),
    'positive-int',
    'head_dim',
    w,
  );
  const rope = parseRope(text, headDim, dialect === 'hf-native' ? HF_NATIVE_ROPE_THETA : 10000, w);
  const plan =
    dialect === 'hf-native'
      ? parseHfNativeLayers(text, numLayers, w)
      : parseMinimaxLayers(text, numLayers, w);
  const intermediate = num(text, 'intermediate_size', 'positive-int', w);
  const cfg: ModelConfig = {
    modelType: 'minimax_m3',
    isVl,
    dialect,
    hiddenSize,
    numLayers,
    numHeads,
    numKvHeads: num(text, 'num_key_value_heads', 'positive-int', w),
    headDim,
    vocabSize,
    maxPositionEmbeddings: optNum(text, 'max_position_embeddings', 'positive-int', 4096, w),
    ...rope,
    rmsNormEps: optNum(text, 'rms_norm_eps', 'positive', 1e-6, w),
    swigluAlpha: optNum(text, 'swiglu_alpha', 'positive', 1.702, w),
    swigluLimit: optNum(text, 'swiglu_limit', 'positive', 7.0, w),
    tieWordEmbeddings: optBool(text, 'tie_word_embeddings', false, w),
    denseIntermediateSize: optNum(text, 'dense_intermediate_size', 'positive-int', intermediate, w),
    moeIntermediateSize: intermediate,
    sharedIntermediateSize: optNum(
      text,
      'shared_intermediate_size',
      'positive-int',
      intermediate,
      w,
    ),
    numSharedExperts: optNum(text, 'n_shared_experts', 'non-negative-int', 0, w),
    numExperts: optNum(text, 'num_local_experts', 'non-negative-int', 0, w),
    numExpertsPerTok: optNum(text, 'num_experts_per_tok', 'non-negative-int', 0, w),
    routedScalingFactor: optNum(text, 'routed_scaling_factor', 'positive', 1, w),
    useRoutingBias: optBool(text, 'use_routing_bias', true, w),
    ...plan,
    numMtpModules: optNum(text, 'num_mtp_modules', 'non-negative-int', 0, w),
    torchDtype: storageDtype(top, text, w),
    quantization: parseQuant(top, text, where),
    eosTokenIds: eosIds(text['eos_token_id'] ?? top['eos_token_id'], vocabSize, 'eos_token_id', w),
  };
  validate(cfg, w);
  return Object.freeze(cfg);
}

function dropNulls(o: Json): Json {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null));
}

/** Relations between fields (each field's own range is checked where it is read). */
function validate(c: ModelConfig, w: string): void {
  const fail = (msg: string): never => {
    throw new ConfigError(`${w}: ${msg}`);
  };
  if (c.numHeads % c.numKvHeads !== 0)
    fail(
      `num_attention_heads (${c.numHeads}) is not a multiple of num_key_value_heads (${c.numKvHeads})`,
    );
  if (c.rotaryDim % 2 !== 0 || c.rotaryDim > c.headDim)
    fail(`rotary_dim (${c.rotaryDim}) must be even and at most head_dim (${c.headDim})`);
  if (c.moeLayers.some(Boolean)) {
    if (c.numExperts <= 0)
      fail('field "num_local_experts" must be positive when the config has MoE layers');
    if (c.numExpertsPerTok <= 0 || c.numExpertsPerTok > c.numExperts)
      fail(
        `num_experts_per_tok (${c.numExpertsPerTok}) must be in 1..num_local_experts (${c.numExperts})`,
      );
  }
  if (c.sparse) {
    const s = c.sparse;
    if (s.numIndexHeads !== c.numKvHeads)
      fail(
        `sparse_num_index_heads / index_n_heads (${s.numIndexHeads}) must equal num_key_value_heads (${c.numKvHeads})`,
      );
    if (s.topkBlocks < s.initBlocks + Math.max(1, s.localBlocks))
      fail(
        `sparse_topk_blocks / index_topk_blocks (${s.topkBlocks}) must leave room for the init (${s.initBlocks}) and local (${Math.max(1, s.localBlocks)}) blocks`,
      );
    if (s.indexDim < c.rotaryDim)
      fail(
        `sparse_index_dim / index_head_dim (${s.indexDim}) must be at least rotary_dim (${c.rotaryDim})`,
      );
  }
}

/** Reads `<dir>/config.json` (and `generation_config.json` for EOS ids when present). */
export function loadModelConfig(dir: string): ModelConfig {
  const path = join(dir, 'config.json');
  let raw: Json;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8')) as Json;
  } catch (e) {
    throw new ConfigError(`${path}: ${(e as Error).message}`);
  }
  const cfg = parseModelConfig(raw, path);
  if (cfg.eosTokenIds.length > 0) return cfg;
  const genPath = join(dir, 'generation_config.json');
  let gen: Json;
  try {
    gen = JSON.parse(readFileSync(genPath, 'utf8')) as Json;
  } catch {
    return cfg;
  }
  return Object.freeze({
    ...cfg,
    eosTokenIds: eosIds(gen['eos_token_id'], cfg.vocabSize, 'eos_token_id', genPath),
  });
}
