import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseModelConfig } from '../../config/model-config.js';
import { openCheckpoint } from './checkpoint.js';
import { writeRandomCheckpoint } from './random-checkpoint.js';
import { PRESETS } from './random-presets.js';
import { SafetensorsFile } from './safetensors-file.js';
import { writeSafetensors, type TensorData } from './safetensors-writer.js';
import { canonicalName, placement, WEIGHT_LAYOUTS, WeightNames } from './weight-layouts.js';
import { modelTensors } from './weight-table.js';

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

describe('weight names in every layout', () => {
  const tiny = parseModelConfig(PRESETS['tiny']!());
  const names = new WeightNames(tiny);

  it('every table tensor resolves back from its name in every layout', () => {
    const specs = modelTensors(tiny);
    // embed, norm, head; 8 per layer; 4 index tensors × 3 MSA layers; 3 dense; 3 MoE × 29.
    expect(specs.length).toBe(3 + 4 * 8 + 3 * 4 + 3 + 3 * (2 + 8 * 3 + 3));
    for (const layout of WEIGHT_LAYOUTS) {
      const raws = new Set<string>();
      for (const s of specs) {
        const at = placement(s, layout, tiny.numExperts);
        raws.add(at.raw);
        const got = names.resolve(at.raw)!.find((r) => r.name === s.name);
        expect(got, `${layout}: ${at.raw}`).toBeDefined();
        if (got!.at) expect(got!.at.rowOffset).toBe(at.rowOffset);
        else expect(canonicalName(at.raw, tiny)).toBe(s.name);
      }
      // One-to-one layouts store every tensor under its own name; fused ones share.
      expect(raws.size < specs.length).toBe(layout === 'fused');
    }
  });

  it('reads per-expert fused gate_up_proj tensors, with and without ".weight"', () => {
    const at = names.resolve('model.language_model.layers.2.mlp.experts.5.gate_up_proj')!;
    expect(at.map((r) => [r.name, r.at!.rowOffset, r.at!.rawShape])).toEqual([
      ['model.layers.2.block_sparse_moe.experts.5.w1.weight', 0, [64, 64]],
      ['model.layers.2.block_sparse_moe.experts.5.w3.weight', 32, [64, 64]],
    ]);
    expect(names.resolve('model.layers.2.mlp.experts.5.gate_up_proj.weight')).toEqual(at);
    const stacked = names.resolve('language_model.model.layers.3.mlp.experts.down_proj.weight')!;
    expect(stacked).toHaveLength(8);
    expect(stacked[7]).toEqual({
      name: 'model.layers.3.block_sparse_moe.experts.7.w2.weight',
      at: {
        raw: 'model.layers.3.mlp.experts.down_proj',
        rawShape: [8, 64, 32],
        index: 7,
        rowOffset: 0,
      },
    });
  });

  it('a per-expert fused checkpoint reads the same values as layout B', () => {
    const dir = mkdtempSync(join(tmpdir(), 'moeserve-pef-'));
    try {
      const b = join(dir, 'b');
      writeRandomCheckpoint({
        config: PRESETS['tiny']!(),
        outDir: b,
        layout: 'b',
        dtype: 'f32',
        seed: 4,
      });
      const src = SafetensorsFile.open(join(b, 'model.safetensors'));
      const out: TensorData[] = [];
      for (const n of src.names()) {
        const m = /^(.*\.experts\.\d+)\.(gate_proj|up_proj)\.weight$/.exec(n);
        if (m?.[2] === 'up_proj') continue;
        const t = src.read(n);
        if (!m) {
          out.push({ name: n, dtype: 'F32', shape: t.shape, data: t.data });
          continue;
        }
        const up = src.read(`${m[1]}.up_proj.weight`).data;
        const data = new Float32Array(t.data.length * 2);
        data.set(t.data);
        data.set(up, t.data.length);
        out.push({
          name: `${m[1]}.gate_up_proj`,
          dtype: 'F32',
          shape: [t.shape[0]! * 2, t.shape[1]!],
          data,
        });
      }
      src.close();
      const f = join(dir, 'pef');
      mkdirSync(f);
      copyFileSync(join(b, 'config.json'), join(f, 'config.json'));
      writeSafetensors(join(f, 'model.safetensors'), out);
      const [cb, cf] = [openCheckpoint(b), openCheckpoint(f)];
      for (const s of modelTensors(tiny)) {
        const slice = { rows: [s.shape[0]! / 2, s.shape[0]! / 2] as [number, number] };
        expect(cf.read(s.name, slice).data).toEqual(cb.read(s.name, slice).data);
      }
      cb.close();
      cf.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
