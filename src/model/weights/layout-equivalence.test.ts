import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../backend/cpu/cpu-backend.js';
import type { ParallelLayout } from '../../parallel/parallel-layout.js';
import { loadModel } from '../load-model.js';
import { runForward } from '../run-forward.js';
import { openCheckpoint, type Checkpoint } from './checkpoint.js';
import { writeRandomCheckpoint, type RandomDType } from './random-checkpoint.js';
import { PRESETS } from './random-presets.js';
import { SafetensorsFile } from './safetensors-file.js';
import { WEIGHT_LAYOUTS, type WeightLayout } from './weight-layouts.js';
import { modelTensors, shardSlice } from './weight-table.js';

const tmp = mkdtempSync(join(tmpdir(), 'moeserve-layouts-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const written = new Map<string, string>();

/** The tiny preset (MSA block 4, top-2 blocks, 8 experts top-2, one dense layer), written once. */
function write(layout: WeightLayout, dtype: RandomDType = 'bf16', shardBytes?: number): string {
  const dir = join(tmp, `${layout}-${dtype}-${shardBytes ?? 0}`);
  if (written.has(dir)) return dir;
  writeRandomCheckpoint({
    config: PRESETS['tiny']!(),
    outDir: dir,
    layout,
    dtype,
    seed: 21,
    ...(shardBytes ? { maxShardBytes: shardBytes } : {}),
  });
  written.set(dir, dir);
  return dir;
}

let copies = 0;

/** A private copy of a written checkpoint, for tests that edit its config. */
function copyOf(layout: WeightLayout): string {
  const dir = join(tmp, `copy-${copies++}`);
  cpSync(write(layout), dir, { recursive: true });
  return dir;
}

const storedNames = (dir: string): string[] => {
  const f = SafetensorsFile.open(join(dir, 'model.safetensors'));
  const names = f.names();
  f.close();
  return names;
};

/** Every table tensor's part for one rank, dequantized. */
const read = (ck: Checkpoint, par: ParallelLayout): Float32Array[] =>
  modelTensors(ck.config).map(
    (s) => ck.read(s.name, { expectShape: s.shape, ...shardSlice(s, ck.config, par) }).data,
  );
const SINGLE: ParallelLayout = { tpRank: 0, tpSize: 1 };

// 24 tokens: 6 MSA blocks of 4 for 2 selected, so the sparse selection is exercised.
const IDS = Array.from({ length: 24 }, (_, i) => (i * 37 + 11) % 256);

describe('every weight layout holds the same model', () => {
  const ref = write('a');

  it('writes the names and config each layout promises', () => {
    const hf = storedNames(write('hf-native'));
    expect(hf).toContain('language_model.model.layers.1.block_sparse_moe.experts.3.w1.weight');
    expect(hf).toContain('language_model.model.layers.1.self_attn.index_q_proj.weight');
    expect(hf).toContain('language_model.lm_head.weight');
    expect(hf).toContain('language_model.model.embed_tokens.weight');
    const cfg = JSON.parse(readFileSync(join(tmp, 'hf-native-bf16-0', 'config.json'), 'utf8'));
    expect(cfg.text_config.model_type).toBe('minimax_m3_vl_text');
    expect(cfg.text_config.mlp_layer_types).toEqual(['dense', 'sparse', 'sparse', 'sparse']);
    const fused = storedNames(write('fused'));
    expect(fused).toContain('model.language_model.layers.1.mlp.experts.gate_up_proj');
    expect(fused).toContain('model.language_model.layers.1.mlp.experts.down_proj');
    expect(fused).toContain('model.language_model.layers.0.mlp.gate_up_proj.weight');
    expect(fused).toContain('model.language_model.layers.1.mlp.shared_experts.gate_up_proj.weight');
    expect(fused).toContain('model.language_model.layers.1.self_attn.indexer.q_proj.weight');
    expect(fused).not.toContain('model.language_model.layers.0.mlp.gate_proj.weight');
    const b = storedNames(write('b'));
    expect(b).toContain('model.layers.2.mlp.experts.5.up_proj.weight');
    expect(b).toContain('model.layers.2.mlp.gate.e_score_correction_bias');
  });

  for (const layout of WEIGHT_LAYOUTS.filter((l) => l !== 'a')) {
    it(`${layout}: forward logits and routes equal layout A's bit for bit`, async () => {
      const dir = write(layout);
      const a = await runForward(await loadModel(ref, { backend: new CpuBackend() }), IDS);
      const b = await runForward(await loadModel(dir, { backend: new CpuBackend() }), IDS);
      expect(Object.keys(b.routedExperts)).toEqual(['1', '2', '3']);
      expect(b.routedExperts).toEqual(a.routedExperts);
      expect(b.logits.length).toBe(IDS.length);
      // toEqual on number[] compares every float exactly (Object.is per element).
      expect(b.logits).toEqual(a.logits);
    });
  }

  it('sharded reads (tp 2, ep 2) of every tensor equal layout A in every layout', () => {
    const ra = openCheckpoint(ref);
    for (const layout of WEIGHT_LAYOUTS) {
      const ck = openCheckpoint(write(layout));
      for (const par of [
        { tpRank: 1, tpSize: 2 },
        { tpRank: 0, tpSize: 2, ep: true },
      ]) {
        expect(read(ck, par)).toEqual(read(ra, par));
      }
      ck.close();
    }
    ra.close();
  });

  it('FP8 weights read the same under every layout (stacked experts too), sharded too', () => {
    const ra = openCheckpoint(write('a', 'mxfp8'));
    for (const layout of ['b', 'vl', 'hf-native', 'fused'] as const) {
      const ck = openCheckpoint(write(layout, 'mxfp8', 40_000));
      expect(ck.config.quantization.method).toBe('mxfp8');
      expect(read(ck, { tpRank: 1, tpSize: 2 })).toEqual(read(ra, { tpRank: 1, tpSize: 2 }));
      ck.close();
    }
    ra.close();
    const fused = openCheckpoint(write('fused', 'mxfp8'));
    const info = fused.info('model.layers.2.block_sparse_moe.experts.3.w3.weight');
    expect([info.rawName, info.dtype, info.scaleName]).toEqual([
      'model.language_model.layers.2.mlp.experts.gate_up_proj',
      'F8_E4M3',
      'model.language_model.layers.2.mlp.experts.gate_up_proj_scale_inv',
    ]);
    fused.close();
    // Block FP8 scales span 128 rows: the tiny model's 32-row halves cannot be fused.
    expect(() => write('fused', 'fp8')).toThrow(/not whole fp8 blocks of 128 rows/);
  });
});

describe('block FP8 in the fused layout', () => {
  it('stacked experts with 128×128 scale grids read like layout A', () => {
    // Widths of 128 so every fused half is whole scale blocks.
    const config = {
      ...PRESETS['tiny']!(),
      hidden_size: 128,
      intermediate_size: 128,
      shared_intermediate_size: 128,
      dense_intermediate_size: 128,
    };
    const dirs = (['a', 'fused'] as const).map((layout) => {
      const dir = join(tmp, `fp8-128-${layout}`);
      writeRandomCheckpoint({ config, outDir: dir, layout, dtype: 'fp8', seed: 5 });
      return openCheckpoint(dir);
    });
    const [a, f] = dirs as [Checkpoint, Checkpoint];
    expect(f.info('model.layers.1.block_sparse_moe.experts.6.w2.weight').dtype).toBe('F8_E4M3');
    // The fused tensors of one MoE and one dense layer, whole and as a tp-2 rank reads them.
    const fusedSpecs = modelTensors(a.config).filter((s) =>
      /layers\.[01]\..*(mlp|moe)/.test(s.name),
    );
    for (const par of [SINGLE, { tpRank: 1, tpSize: 2 }]) {
      for (const s of fusedSpecs) {
        const o = { expectShape: s.shape, ...shardSlice(s, a.config, par) };
        expect(f.read(s.name, o).data).toEqual(a.read(s.name, o).data);
      }
    }
    a.close();
    f.close();
  });
});

describe('a checkpoint that disagrees with its config', () => {
  it('names the stored tensor and the config fields', async () => {
    const dir = copyOf('fused');
    const cfgPath = join(dir, 'config.json');
    const cfg = JSON.parse(readFileSync(cfgPath, 'utf8'));
    cfg.text_config.intermediate_size = 16;
    cfg.text_config.shared_intermediate_size = 32;
    writeFileSync(cfgPath, JSON.stringify(cfg));
    expect(() => openCheckpoint(dir)).toThrow(
      /"model\.language_model\.layers\.1\.mlp\.experts\.gate_up_proj" has shape \[8, 64, 64\], but config\.json implies \[8, 32, 64\] \(it holds model\.layers\.1\.block_sparse_moe\.experts\.0\.w1\.weight: \[16, 64\] \(intermediate_size × hidden_size\)\)/,
    );
    const hf = copyOf('hf-native');
    const hfPath = join(hf, 'config.json');
    const c2 = JSON.parse(readFileSync(hfPath, 'utf8'));
    c2.text_config.dense_intermediate_size = 64;
    writeFileSync(hfPath, JSON.stringify(c2));
    await expect(loadModel(hf, { backend: new CpuBackend() })).rejects.toThrow(
      /"language_model\.model\.layers\.0\.mlp\.gate_proj\.weight" \(model\.layers\.0\.mlp\.gate_proj\.weight\) has shape \[96, 64\], config\.json implies \[64, 64\] \(dense_intermediate_size × hidden_size\)/,
    );
  });
});

describe('layer structure that disagrees with the config', () => {
  it('names the tensor and the per-layer field', () => {
    const dir = copyOf('hf-native');
    const cfgPath = join(dir, 'config.json');
    const cfg = JSON.parse(readFileSync(cfgPath, 'utf8'));
    cfg.text_config.mlp_layer_types = ['dense', 'dense', 'sparse', 'sparse'];
    writeFileSync(cfgPath, JSON.stringify(cfg));
    expect(() => openCheckpoint(dir)).toThrow(
      /tensor "language_model\.model\.layers\.1\.block_sparse_moe\.\S+" does not fit layer 1 as config\.json describes it \(mlp_layer_types\[1\]: dense\)/,
    );
    cfg.text_config.mlp_layer_types = ['dense', 'sparse', 'sparse', 'sparse'];
    cfg.text_config.layer_types = [
      'full_attention',
      'full_attention',
      'minimax_m3_sparse',
      'minimax_m3_sparse',
    ];
    writeFileSync(cfgPath, JSON.stringify(cfg));
    expect(() => openCheckpoint(dir)).toThrow(
      /"language_model\.model\.layers\.1\.self_attn\.index_\S+" does not fit layer 1 as config\.json describes it \(layer_types\[1\]: full attention\)/,
    );
  });
});
