import { describe, expect, it } from 'vitest';
import { PRESETS } from '../model/weights/random-presets.js';
import { hfNativeDefaults, toHfNativeConfig } from './hf-native-config.js';
import { ConfigError, parseModelConfig } from './model-config.js';

type Json = Record<string, unknown>;
const tiny = (): Json => PRESETS['tiny']!();
const sparseOf = (c: Json): Json => c['sparse_attention_config'] as Json;

describe('parseModelConfig range checks', () => {
  // Each case: a change to the tiny preset, and the field + value the error must name.
  const cases: [string, (c: Json) => void, RegExp][] = [
    [
      'rms_norm_eps: -1',
      (c) => (c['rms_norm_eps'] = -1),
      /"rms_norm_eps" must be a positive finite number \(got -1\)/,
    ],
    [
      'rope_theta: 0',
      (c) => (c['rope_theta'] = 0),
      /"rope_theta" must be a positive finite number \(got 0\)/,
    ],
    [
      'sparse_topk_blocks: 2.5',
      (c) => (sparseOf(c)['sparse_topk_blocks'] = 2.5),
      /"sparse_topk_blocks" must be a positive integer \(got 2.5\)/,
    ],
    [
      'num_experts_per_tok: 1.5',
      (c) => (c['num_experts_per_tok'] = 1.5),
      /"num_experts_per_tok" must be a non-negative integer \(got 1.5\)/,
    ],
    [
      'hidden_size: 0',
      (c) => (c['hidden_size'] = 0),
      /"hidden_size" must be a positive integer \(got 0\)/,
    ],
    [
      'vocab_size: 100.5',
      (c) => (c['vocab_size'] = 100.5),
      /"vocab_size" must be a positive integer \(got 100.5\)/,
    ],
    [
      'intermediate_size: -32',
      (c) => (c['intermediate_size'] = -32),
      /"intermediate_size" must be a positive integer \(got -32\)/,
    ],
    [
      'dense_intermediate_size: 0',
      (c) => (c['dense_intermediate_size'] = 0),
      /"dense_intermediate_size" must be a positive integer/,
    ],
    [
      'num_local_experts: 7.5',
      (c) => (c['num_local_experts'] = 7.5),
      /"num_local_experts" must be a non-negative integer \(got 7.5\)/,
    ],
    [
      'routed_scaling_factor: 0',
      (c) => (c['routed_scaling_factor'] = 0),
      /"routed_scaling_factor" must be a positive finite number/,
    ],
    [
      'swiglu_limit: -7',
      (c) => (c['swiglu_limit'] = -7),
      /"swiglu_limit" must be a positive finite number \(got -7\)/,
    ],
    [
      'swiglu_alpha: 0',
      (c) => (c['swiglu_alpha'] = 0),
      /"swiglu_alpha" must be a positive finite number/,
    ],
    [
      'max_position_embeddings: 0',
      (c) => (c['max_position_embeddings'] = 0),
      /"max_position_embeddings" must be a positive integer/,
    ],
    [
      'partial_rotary_factor: 1.5',
      (c) => (c['partial_rotary_factor'] = 1.5),
      /"partial_rotary_factor" must be a number in \(0, 1\] \(got 1.5\)/,
    ],
    [
      'rotary_dim vs partial',
      (c) => (c['rotary_dim'] = 4),
      /rotary_dim \(4\) disagrees with head_dim × partial_rotary_factor \(16 × 0.5 = 8\)/,
    ],
    [
      'sparse_block_size: 0',
      (c) => (sparseOf(c)['sparse_block_size'] = 0),
      /"sparse_block_size" must be a positive integer \(got 0\)/,
    ],
    [
      'sparse_local_block: -1',
      (c) => (sparseOf(c)['sparse_local_block'] = -1),
      /"sparse_local_block" must be a non-negative integer \(got -1\)/,
    ],
    [
      'num_mtp_modules: 0.5',
      (c) => (c['num_mtp_modules'] = 0.5),
      /"num_mtp_modules" must be a non-negative integer/,
    ],
    [
      'n_shared_experts: -1',
      (c) => (c['n_shared_experts'] = -1),
      /"n_shared_experts" must be a non-negative integer/,
    ],
    [
      'eos_token_id out of vocab',
      (c) => (c['eos_token_id'] = 256),
      /"eos_token_id" holds 256, not a token id in 0..255/,
    ],
    [
      'eos_token_id not an integer',
      (c) => (c['eos_token_id'] = [1, 'x']),
      /"eos_token_id" holds "x"/,
    ],
    [
      'num_experts_per_tok > experts',
      (c) => (c['num_experts_per_tok'] = 9),
      /num_experts_per_tok \(9\) must be in 1..num_local_experts \(8\)/,
    ],
    ['hidden_act gelu', (c) => (c['hidden_act'] = 'gelu'), /"hidden_act" is "gelu"/],
    [
      'moe_layer_freq: -1',
      (c) => (c['moe_layer_freq'] = -1),
      /"moe_layer_freq" must be a non-negative integer \(got -1\)/,
    ],
    [
      'head_dim not integral',
      (c) => {
        delete c['head_dim'];
        c['hidden_size'] = 66;
      },
      /"head_dim" must be a positive integer \(got 16.5\)/,
    ],
  ];
  for (const [label, edit, msg] of cases) {
    it(`rejects ${label}`, () => {
      const c = structuredClone(tiny());
      edit(c);
      expect(() => parseModelConfig(c, 'cfg.json')).toThrow(ConfigError);
      expect(() => parseModelConfig(c, 'cfg.json')).toThrow(msg);
    });
  }

  it('names the file in every error', () => {
    const c = { ...tiny(), rms_norm_eps: -1 };
    expect(() => parseModelConfig(c, '/x/config.json')).toThrow(/^\/x\/config\.json: field/);
  });

  it('accepts "silu" only beside swiglu_alpha and swiglu_limit', () => {
    expect(parseModelConfig({ ...tiny(), hidden_act: 'silu' }).swigluLimit).toBe(2);
    const c: Json = { ...tiny(), hidden_act: 'silu' };
    delete c['swiglu_alpha'];
    expect(() => parseModelConfig(c)).toThrow(/"hidden_act" is "silu"/);
  });
});

describe('HF-native (transformers 5.x) config dialect', () => {
  const base = parseModelConfig(tiny());

  it('toHfNativeConfig writes the dialect and parses back to the same model', () => {
    const hf = toHfNativeConfig(base);
    const text = hf['text_config'] as Json;
    expect(hf['model_type']).toBe('minimax_m3_vl');
    expect(text['model_type']).toBe('minimax_m3_vl_text');
    expect(text['hidden_act']).toBe('silu');
    expect(text['layer_types']).toEqual([
      'full_attention',
      'minimax_m3_sparse',
      'minimax_m3_sparse',
      'minimax_m3_sparse',
    ]);
    expect(text['mlp_layer_types']).toEqual(['dense', 'sparse', 'sparse', 'sparse']);
    expect(text['rope_parameters']).toEqual({
      rope_type: 'default',
      rope_theta: 5e6,
      partial_rotary_factor: 0.5,
    });
    expect(text).not.toHaveProperty('sparse_attention_config');
    expect(text).not.toHaveProperty('torch_dtype');
    expect(hf['dtype']).toBe('bfloat16');
    const back = parseModelConfig(hf);
    expect(back).toEqual({ ...base, isVl: true, dialect: 'hf-native' });
  });

  it('fills fields transformers leaves out (its class defaults) with those defaults', () => {
    const hf = toHfNativeConfig(base);
    const text = hf['text_config'] as Json;
    const defaults = hfNativeDefaults();
    // save_pretrained drops what equals the class default: rope_theta 5e6, swiglu_alpha, ...
    for (const k of Object.keys(text))
      if (JSON.stringify(text[k]) === JSON.stringify(defaults[k])) delete text[k];
    text['rope_parameters'] = { rope_type: 'default', partial_rotary_factor: 0.5 };
    expect(text).not.toHaveProperty('swiglu_alpha');
    expect(text).not.toHaveProperty('index_local_blocks');
    const back = parseModelConfig(hf);
    expect(back).toEqual({ ...base, isVl: true, dialect: 'hf-native' });
  });

  it("reads the real model's index fields", () => {
    const c = parseModelConfig({
      model_type: 'minimax_m3_vl',
      text_config: {
        model_type: 'minimax_m3_vl_text',
        layer_types: [...Array(3).fill('full_attention'), ...Array(57).fill('minimax_m3_sparse')],
        mlp_layer_types: [...Array(3).fill('dense'), ...Array(57).fill('sparse')],
        rope_parameters: { rope_theta: 5e6, partial_rotary_factor: 0.5 },
      },
    });
    expect(c.sparse).toEqual({
      indexDim: 128,
      numIndexHeads: 4,
      topkBlocks: 16,
      blockSize: 128,
      initBlocks: 0,
      localBlocks: 1,
      scoreType: 'max',
    });
    expect(c.moeLayers.filter(Boolean)).toHaveLength(57);
    expect(c.sparseLayers.slice(0, 4)).toEqual([false, false, false, true]);
    expect([c.rotaryDim, c.ropeTheta, c.numExperts, c.numSharedExperts]).toEqual([64, 5e6, 128, 1]);
  });

  it('rejects fields that disagree, naming both', () => {
    const hf = toHfNativeConfig(base);
    const text = hf['text_config'] as Json;
    text['moe_layer_freq'] = [0, 0, 1, 1];
    expect(() => parseModelConfig(hf)).toThrow(/"mlp_layer_types" and "moe_layer_freq" disagree/);
    delete text['moe_layer_freq'];
    text['sparse_attention_config'] = { sparse_topk_blocks: 3 };
    expect(() => parseModelConfig(hf)).toThrow(
      /"index_topk_blocks" and "sparse_attention_config.sparse_topk_blocks" disagree \(2 vs 3\)/,
    );
    delete text['sparse_attention_config'];
    text['layer_types'] = [
      'full_attention',
      'sliding_attention',
      'full_attention',
      'full_attention',
    ];
    expect(() => parseModelConfig(hf)).toThrow(
      /"layer_types"\[1\] is "sliding_attention", expected "minimax_m3_sparse" or "full_attention"/,
    );
    text['layer_types'] = ['full_attention'];
    expect(() => parseModelConfig(hf)).toThrow(/"layer_types" must be a list of 4 entries/);
  });

  it('range-checks the flat index fields', () => {
    const hf = toHfNativeConfig(base);
    (hf['text_config'] as Json)['index_topk_blocks'] = 2.5;
    expect(() => parseModelConfig(hf)).toThrow(
      /"index_topk_blocks" must be a positive integer \(got 2.5\)/,
    );
    (hf['text_config'] as Json)['index_topk_blocks'] = 2;
    (hf['text_config'] as Json)['rope_parameters'] = { rope_theta: 0 };
    expect(() => parseModelConfig(hf)).toThrow(
      /rope_parameters: field "rope_theta" must be a positive finite number \(got 0\)/,
    );
    (hf['text_config'] as Json)['rope_parameters'] = { rope_theta: 1e4 };
    (hf['text_config'] as Json)['rope_theta'] = 5e6;
    expect(() => parseModelConfig(hf)).toThrow(
      /fields "rope_parameters.rope_theta" and "rope_theta" disagree \(10000 vs 5000000\)/,
    );
  });
});
