import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** MSA (sparse attention) settings; see docs/architecture.md and shared/design/minimax-m3.md §2.5. */
export interface SparseAttentionConfig {
  readonly indexDim: number;
  readonly numIndexHeads: number;
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

/** The text model of a MiniMax-M3 checkpoint, in engine names. Frozen after parsing. */
export interface ModelConfig {
  readonly modelType: 'minimax_m3';
  /** True when the checkpoint is the VL wrapper (`minimax_m3_vl`); weights then carry a prefix. */
  readonly isVl: boolean;
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

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Json = Record<string, unknown>;

function field<T>(obj: Json, key: string, kind: 'number' | 'boolean' | 'string', where: string): T {
  const v = obj[key];
  if (typeof v !== kind) {
    throw new ConfigError(
      `${where}: field "${key}" is ${v === undefined ? 'missing' : `not a ${kind} (${JSON.stringify(v)})`}`,
    );
  }
  return v as T;
}

function optional<T>(
  obj: Json,
  key: string,
  kind: 'number' | 'boolean' | 'string',
  fallback: T,
  where: string,
): T {
  return obj[key] === undefined || obj[key] === null ? fallback : field<T>(obj, key, kind, where);
}

function layerFlags(
  obj: Json,
  key: string,
  numLayers: number,
  where: string,
  fallback: boolean,
): boolean[] {
  const v = obj[key];
  if (v === undefined) return new Array<boolean>(numLayers).fill(fallback);
  if (typeof v === 'number') {
    // An integer frequency k: every k-th layer (as some configs write moe_layer_freq = 1).
    return Array.from({ length: numLayers }, (_, i) => v > 0 && (i + 1) % v === 0);
  }
  if (
    !Array.isArray(v) ||
    v.length !== numLayers ||
    v.some((x) => x !== 0 && x !== 1 && typeof x !== 'boolean')
  ) {
    throw new ConfigError(
      `${where}: field "${key}" must be a list of ${numLayers} zeros and ones (num_hidden_layers)`,
    );
  }
  return v.map((x) => x === 1 || x === true);
}

function parseSparse(
  text: Json,
  numLayers: number,
  where: string,
): { sparse: SparseAttentionConfig | null; layers: boolean[] } {
  const raw = text['sparse_attention_config'] as Json | undefined;
  if (!raw || raw['use_sparse_attention'] !== true)
    return { sparse: null, layers: new Array<boolean>(numLayers).fill(false) };
  const w = `${where}.sparse_attention_config`;
  const scoreType = optional<string>(raw, 'sparse_score_type', 'string', 'max', w);
  if (scoreType !== 'max')
    throw new ConfigError(`${w}: sparse_score_type "${scoreType}" is not supported (only "max")`);
  const sparse: SparseAttentionConfig = {
    indexDim: field(raw, 'sparse_index_dim', 'number', w),
    numIndexHeads: field(raw, 'sparse_num_index_heads', 'number', w),
    topkBlocks: field(raw, 'sparse_topk_blocks', 'number', w),
    blockSize: field(raw, 'sparse_block_size', 'number', w),
    initBlocks: optional(raw, 'sparse_init_block', 'number', 0, w),
    localBlocks: optional(raw, 'sparse_local_block', 'number', 1, w),
    scoreType: 'max',
  };
  return { sparse, layers: layerFlags(raw, 'sparse_attention_freq', numLayers, w, true) };
}

function parseQuant(top: Json, text: Json, where: string): QuantizationConfig {
  const q = (top['quantization_config'] ?? text['quantization_config']) as Json | undefined;
  if (!q) return { method: 'none', blockSize: [1, 1] };
  const method = q['quant_method'];
  const block = q['weight_block_size'];
  if (method !== 'fp8' && method !== 'mxfp8') {
    throw new ConfigError(
      `${where}: quantization_config.quant_method "${String(method)}" is not supported (fp8, mxfp8)`,
    );
  }
  const fallback: [number, number] = method === 'fp8' ? [128, 128] : [1, 32];
  if (
    block !== undefined &&
    (!Array.isArray(block) ||
      block.length !== 2 ||
      !block.every((b) => Number.isInteger(b) && b > 0))
  ) {
    throw new ConfigError(
      `${where}: quantization_config.weight_block_size must be two positive integers`,
    );
  }
  return { method, blockSize: (block as [number, number] | undefined) ?? fallback };
}

function eosIds(v: unknown): number[] {
  if (typeof v === 'number') return [v];
  if (Array.isArray(v)) return v.filter((x): x is number => typeof x === 'number');
  return [];
}

/** Parses a HF config.json object (text or VL wrapper) into a validated ModelConfig. */
export function parseModelConfig(top: Json, where = 'config.json'): ModelConfig {
  const topType = top['model_type'];
  const isVl = topType === 'minimax_m3_vl';
  const text = isVl ? (top['text_config'] as Json | undefined) : top;
  if (!text || typeof text !== 'object')
    throw new ConfigError(`${where}: field "text_config" is missing for model_type minimax_m3_vl`);
  const w = isVl ? `${where}: text_config` : where;
  const textType = text['model_type'];
  if (!isVl && topType !== 'minimax_m3') {
    throw new ConfigError(
      `${where}: model_type "${String(topType)}" is not supported (minimax_m3, minimax_m3_vl)`,
    );
  }
  if (isVl && textType !== undefined && textType !== 'minimax_m3' && textType !== 'minimax_m2') {
    throw new ConfigError(`${w}: model_type "${String(textType)}" is not a MiniMax-M3 text model`);
  }
  const numLayers = field<number>(text, 'num_hidden_layers', 'number', w);
  const numHeads = field<number>(text, 'num_attention_heads', 'number', w);
  const numKvHeads = field<number>(text, 'num_key_value_heads', 'number', w);
  const hiddenSize = field<number>(text, 'hidden_size', 'number', w);
  const headDim = optional<number>(text, 'head_dim', 'number', hiddenSize / numHeads, w);
  const partial = optional<number>(text, 'partial_rotary_factor', 'number', 1, w);
  const rotaryDim = optional<number>(text, 'rotary_dim', 'number', headDim * partial, w);
  const { sparse, layers: sparseLayers } = parseSparse(text, numLayers, w);
  const moeLayers = layerFlags(text, 'moe_layer_freq', numLayers, w, true);
  const intermediate = field<number>(text, 'intermediate_size', 'number', w);
  const cfg: ModelConfig = {
    modelType: 'minimax_m3',
    isVl,
    hiddenSize,
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    vocabSize: field(text, 'vocab_size', 'number', w),
    maxPositionEmbeddings: optional(text, 'max_position_embeddings', 'number', 4096, w),
    ropeTheta: optional(text, 'rope_theta', 'number', 10000, w),
    rotaryDim,
    rmsNormEps: optional(text, 'rms_norm_eps', 'number', 1e-6, w),
    swigluAlpha: optional(text, 'swiglu_alpha', 'number', 1.702, w),
    swigluLimit: optional(text, 'swiglu_limit', 'number', 7.0, w),
    tieWordEmbeddings: optional(text, 'tie_word_embeddings', 'boolean', false, w),
    denseIntermediateSize: optional(text, 'dense_intermediate_size', 'number', intermediate, w),
    moeIntermediateSize: intermediate,
    sharedIntermediateSize: optional(text, 'shared_intermediate_size', 'number', intermediate, w),
    numSharedExperts: optional(text, 'n_shared_experts', 'number', 0, w),
    numExperts: optional(text, 'num_local_experts', 'number', 0, w),
    numExpertsPerTok: optional(text, 'num_experts_per_tok', 'number', 0, w),
    routedScalingFactor: optional(text, 'routed_scaling_factor', 'number', 1, w),
    useRoutingBias: optional(text, 'use_routing_bias', 'boolean', true, w),
    moeLayers,
    sparseLayers,
    sparse,
    numMtpModules: optional(text, 'num_mtp_modules', 'number', 0, w),
    torchDtype: String(top['torch_dtype'] ?? text['torch_dtype'] ?? 'bfloat16'),
    quantization: parseQuant(top, text, where),
    eosTokenIds: eosIds(text['eos_token_id'] ?? top['eos_token_id']),
  };
  validate(cfg, w);
  return Object.freeze(cfg);
}

function validate(c: ModelConfig, w: string): void {
  const fail = (msg: string): never => {
    throw new ConfigError(`${w}: ${msg}`);
  };
  for (const [k, v] of Object.entries({
    hidden_size: c.hiddenSize,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    num_key_value_heads: c.numKvHeads,
    head_dim: c.headDim,
    vocab_size: c.vocabSize,
  })) {
    if (!Number.isInteger(v) || v <= 0) fail(`field "${k}" must be a positive integer (got ${v})`);
  }
  if (c.numHeads % c.numKvHeads !== 0)
    fail(
      `num_attention_heads (${c.numHeads}) is not a multiple of num_key_value_heads (${c.numKvHeads})`,
    );
  if (c.rotaryDim % 2 !== 0 || c.rotaryDim > c.headDim)
    fail(`rotary_dim (${c.rotaryDim}) must be even and at most head_dim (${c.headDim})`);
  if (c.moeLayers.some(Boolean)) {
    if (c.numExperts <= 0)
      fail('field "num_local_experts" must be positive when moe_layer_freq has MoE layers');
    if (c.numExpertsPerTok <= 0 || c.numExpertsPerTok > c.numExperts)
      fail(
        `num_experts_per_tok (${c.numExpertsPerTok}) must be in 1..num_local_experts (${c.numExperts})`,
      );
  }
  if (c.sparse) {
    if (c.sparse.numIndexHeads !== c.numKvHeads)
      fail(
        `sparse_num_index_heads (${c.sparse.numIndexHeads}) must equal num_key_value_heads (${c.numKvHeads})`,
      );
    if (c.sparse.topkBlocks < 1 + c.sparse.initBlocks)
      fail('sparse_topk_blocks must leave room for the local block');
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
  try {
    const gen = JSON.parse(readFileSync(join(dir, 'generation_config.json'), 'utf8')) as Json;
    return Object.freeze({ ...cfg, eosTokenIds: eosIds(gen['eos_token_id']) });
  } catch {
    return cfg;
  }
}
