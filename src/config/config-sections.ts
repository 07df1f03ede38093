import { HF_NATIVE_TEXT_TYPE } from './hf-native-config.js';
import {
  ConfigError,
  layerFlags,
  num,
  optNum,
  optObject,
  optStr,
  type Json,
} from './config-fields.js';
import type {
  ConfigDialect,
  LayerPlan,
  QuantizationConfig,
  SparseAttentionConfig,
} from './model-config.js';

/** The parts of config.json that take more than one field to read: dialect, layers, RoPE, quantization. */

/** MiniMax's dialect: `sparse_attention_config` and `moe_layer_freq`. */
export function parseMinimaxLayers(text: Json, numLayers: number, where: string): LayerPlan {
  const moeLayers =
    layerFlags(text, 'moe_layer_freq', numLayers, where) ??
    new Array<boolean>(numLayers).fill(true);
  const raw = optObject(text, 'sparse_attention_config', where);
  if (!raw || raw['use_sparse_attention'] !== true)
    return { moeLayers, sparseLayers: new Array<boolean>(numLayers).fill(false), sparse: null };
  const w = `${where}.sparse_attention_config`;
  const scoreType = optStr(raw, 'sparse_score_type', 'max', w);
  if (scoreType !== 'max')
    throw new ConfigError(`${w}: sparse_score_type "${scoreType}" is not supported (only "max")`);
  const sparse: SparseAttentionConfig = {
    indexDim: num(raw, 'sparse_index_dim', 'positive-int', w),
    numIndexHeads: num(raw, 'sparse_num_index_heads', 'positive-int', w),
    topkBlocks: num(raw, 'sparse_topk_blocks', 'positive-int', w),
    blockSize: num(raw, 'sparse_block_size', 'positive-int', w),
    initBlocks: optNum(raw, 'sparse_init_block', 'non-negative-int', 0, w),
    localBlocks: optNum(raw, 'sparse_local_block', 'non-negative-int', 1, w),
    scoreType: 'max',
  };
  const sparseLayers =
    layerFlags(raw, 'sparse_attention_freq', numLayers, w) ??
    new Array<boolean>(numLayers).fill(true);
  return { moeLayers, sparseLayers, sparse };
}

export function parseQuant(top: Json, text: Json, where: string): QuantizationConfig {
  const q =
    optObject(top, 'quantization_config', where) ?? optObject(text, 'quantization_config', where);
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
      `${where}: quantization_config.weight_block_size must be two positive integers (got ${JSON.stringify(block)})`,
    );
  }
  return { method, blockSize: (block as [number, number] | undefined) ?? fallback };
}

const TEXT_TYPES = ['minimax_m3', 'minimax_m2', HF_NATIVE_TEXT_TYPE];

/** The text part of a config and what it is: VL wrapper or not, which dialect. */
export function textPart(
  top: Json,
  where: string,
): { text: Json; isVl: boolean; dialect: ConfigDialect; w: string } {
  const topType = top['model_type'];
  if (topType === 'minimax_m3' || topType === HF_NATIVE_TEXT_TYPE) {
    return {
      text: top,
      isVl: false,
      dialect: topType === 'minimax_m3' ? 'minimax' : 'hf-native',
      w: where,
    };
  }
  if (topType !== 'minimax_m3_vl') {
    throw new ConfigError(
      `${where}: model_type "${String(topType)}" is not supported (minimax_m3, minimax_m3_vl, ${HF_NATIVE_TEXT_TYPE})`,
    );
  }
  const text = optObject(top, 'text_config', where);
  if (!text)
    throw new ConfigError(`${where}: field "text_config" is missing for model_type minimax_m3_vl`);
  const w = `${where}: text_config`;
  const textType = text['model_type'];
  if (textType !== undefined && !TEXT_TYPES.includes(textType as string)) {
    throw new ConfigError(`${w}: model_type "${String(textType)}" is not a MiniMax-M3 text model`);
  }
  return {
    text,
    isVl: true,
    dialect: textType === HF_NATIVE_TEXT_TYPE ? 'hf-native' : 'minimax',
    w,
  };
}

/**
 * `rope_theta` and the rotated width: top-level fields (MiniMax) or `rope_parameters`
 * (transformers 5.x); when a config states the width twice the two must agree.
 */
export function parseRope(
  text: Json,
  headDim: number,
  thetaFallback: number,
  w: string,
): { ropeTheta: number; rotaryDim: number } {
  const rp = optObject(text, 'rope_parameters', w) ?? {};
  const rw = `${w}.rope_parameters`;
  const both = (key: string, range: 'positive' | 'unit-interval', fallback: number): number => {
    const nested = optNum(rp, key, range, NaN, rw);
    const flat = optNum(text, key, range, NaN, w);
    if (!Number.isNaN(nested) && !Number.isNaN(flat) && nested !== flat)
      throw new ConfigError(
        `${w}: fields "rope_parameters.${key}" and "${key}" disagree (${nested} vs ${flat})`,
      );
    return Number.isNaN(nested) ? (Number.isNaN(flat) ? fallback : flat) : nested;
  };
  const ropeTheta = both('rope_theta', 'positive', thetaFallback);
  const partial = both('partial_rotary_factor', 'unit-interval', 1);
  const fromPartial = headDim * partial;
  const rotaryDim = optNum(text, 'rotary_dim', 'non-negative-int', fromPartial, w);
  const partialGiven = rp['partial_rotary_factor'] ?? text['partial_rotary_factor'];
  if (partialGiven !== undefined && partialGiven !== null && rotaryDim !== fromPartial) {
    throw new ConfigError(
      `${w}: rotary_dim (${rotaryDim}) disagrees with head_dim × partial_rotary_factor (${headDim} × ${partial} = ${fromPartial})`,
    );
  }
  return { ropeTheta, rotaryDim };
}

/** `hidden_act`: SwiGLU-OAI, or "silu" as transformers writes it beside swiglu_alpha/limit. */
export function checkActivation(text: Json, dialect: ConfigDialect, w: string): void {
  const act = optStr(text, 'hidden_act', 'swigluoai', w);
  if (act === 'swigluoai') return;
  // transformers 5.x normalises hidden_act to "silu" although the MLP is SwiGLU-OAI
  // (computed from swiglu_alpha/swiglu_limit); a MiniMax-dialect config must say so itself.
  const oai =
    dialect === 'hf-native' ||
    (text['swiglu_alpha'] !== undefined && text['swiglu_limit'] !== undefined);
  if (act === 'silu' && oai) return;
  throw new ConfigError(
    `${w}: field "hidden_act" is ${JSON.stringify(act)}; MiniMax-M3 MLPs are SwiGLU-OAI ("swigluoai", or "silu" with swiglu_alpha and swiglu_limit)`,
  );
}

/** `dtype` (transformers 5.x) or `torch_dtype`, top level first. */
export function storageDtype(top: Json, text: Json, w: string): string {
  for (const o of [top, text])
    for (const k of ['dtype', 'torch_dtype']) if (typeof o[k] === 'string') return o[k] as string;
  for (const o of [top, text])
    for (const k of ['dtype', 'torch_dtype'])
      if (o[k] !== undefined && o[k] !== null)
        throw new ConfigError(`${w}: field "${k}" is not a string (${JSON.stringify(o[k])})`);
  return 'bfloat16';
}
