import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadModelConfig, parseModelConfig } from '../../config/model-config.js';
import { bf16ToF32, F8E4M3_TABLE, f32ToBf16 } from '../../tensor/dtype.js';
import { openCheckpoint } from './checkpoint.js';
import { f32ToE4m3 } from './fp8-quantize.js';
import { modelTensors } from './weight-table.js';
import { writeRandomCheckpoint } from './random-checkpoint.js';
import { PRESETS, withNumLayers } from './random-presets.js';

const tmp = mkdtempSync(join(tmpdir(), 'moeserve-rand-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function std(x: Float32Array): number {
  let s = 0;
  let s2 = 0;
  for (const v of x) {
    s += v;
    s2 += v * v;
  }
  return Math.sqrt(s2 / x.length - (s / x.length) ** 2);
}

describe('writeRandomCheckpoint', () => {
  const tiny = PRESETS['tiny']!();

  it('tiny round-trips: config parses, every tensor has its shape, dtype and scale', () => {
    const dir = join(tmp, 'tiny');
    const res = writeRandomCheckpoint({ config: tiny, outDir: dir, seed: 7 });
    expect(res.files).toEqual(['model.safetensors']);
    const ck = openCheckpoint(dir);
    expect(ck.config).toEqual(loadModelConfig(dir));
    expect(ck.config).toEqual(parseModelConfig(tiny));
    expect(ck.config.moeLayers).toEqual([false, true, true, true]);
    const specs = modelTensors(ck.config);
    expect(ck.names().sort()).toEqual(specs.map((s) => s.name).sort());
    for (const s of specs) expect(ck.read(s.name, { expectShape: s.shape }).shape).toEqual(s.shape);
    expect(ck.info('model.layers.1.block_sparse_moe.gate.weight').dtype).toBe('F32');
    expect(ck.info('model.layers.1.block_sparse_moe.e_score_correction_bias').dtype).toBe('F32');
    expect(ck.info('model.layers.1.self_attn.q_proj.weight').dtype).toBe('BF16');
    // Linear weights ~ 1/sqrt(in), embeddings ~ 1, norms ~ 0.05 around 0.
    expect(std(ck.read('model.layers.0.mlp.down_proj.weight').data)).toBeCloseTo(
      1 / Math.sqrt(96),
      2,
    );
    expect(std(ck.read('model.embed_tokens.weight').data)).toBeCloseTo(1, 1);
    expect(std(ck.read('model.norm.weight').data)).toBeLessThan(0.08);
    ck.close();
  });

  it('is deterministic per seed', () => {
    const a = join(tmp, 'seed-a');
    const b = join(tmp, 'seed-b');
    const c = join(tmp, 'seed-c');
    writeRandomCheckpoint({ config: tiny, outDir: a, seed: 3 });
    writeRandomCheckpoint({ config: tiny, outDir: b, seed: 3 });
    writeRandomCheckpoint({ config: tiny, outDir: c, seed: 4 });
    const file = (d: string) => readFileSync(join(d, 'model.safetensors'));
    expect(file(a).equals(file(b))).toBe(true);
    expect(file(a).equals(file(c))).toBe(false);
  });

  it('bf16 values are the f32 values rounded to bf16', () => {
    const a = join(tmp, 'cmp-f32');
    const b = join(tmp, 'cmp-bf16');
    writeRandomCheckpoint({ config: tiny, outDir: a, dtype: 'f32', seed: 9 });
    writeRandomCheckpoint({ config: tiny, outDir: b, dtype: 'bf16', seed: 9 });
    const [ca, cb] = [openCheckpoint(a), openCheckpoint(b)];
    for (const n of [
      'model.embed_tokens.weight',
      'model.layers.3.block_sparse_moe.experts.1.w3.weight',
    ]) {
      const x = ca.read(n).data;
      const y = cb.read(n).data;
      expect(y.every((v, i) => v === bf16ToF32(f32ToBf16(x[i]!)))).toBe(true);
      expect(x.some((v, i) => v !== y[i])).toBe(true);
    }
    // Routers stay F32 in both.
    const g = 'model.layers.1.block_sparse_moe.gate.weight';
    expect(cb.read(g).data).toEqual(ca.read(g).data);
    ca.close();
    cb.close();
  });

  for (const fmt of ['fp8', 'mxfp8'] as const) {
    it(`${fmt}: sharded, scales beside weights, dequantizes close to the f32 values`, () => {
      const ref = join(tmp, `ref-${fmt}`);
      const dir = join(tmp, fmt);
      writeRandomCheckpoint({ config: tiny, outDir: ref, dtype: 'f32', seed: 11 });
      const res = writeRandomCheckpoint({
        config: tiny,
        outDir: dir,
        dtype: fmt,
        seed: 11,
        maxShardBytes: 100_000,
      });
      expect(res.files.length).toBeGreaterThan(1);
      const index = JSON.parse(readFileSync(join(dir, 'model.safetensors.index.json'), 'utf8'));
      const name = 'model.layers.2.block_sparse_moe.experts.5.w2.weight';
      expect(index.weight_map[`${name}_scale_inv`]).toBe(index.weight_map[name]);
      const ck = openCheckpoint(dir);
      const r = openCheckpoint(ref);
      expect(ck.config.quantization.method).toBe(fmt);
      expect(ck.info(name).dtype).toBe('F8_E4M3');
      expect(ck.info('model.layers.1.self_attn.index_k_proj.weight').dtype).toBe('BF16');
      for (const n of [
        name,
        'model.layers.0.mlp.down_proj.weight',
        'model.layers.3.self_attn.o_proj.weight',
      ]) {
        const q = ck.read(n).data;
        const x = r.read(n).data;
        const amax = x.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
        for (let i = 0; i < x.length; i++) {
          // e4m3 keeps 3 mantissa bits: relative error ≤ 2^-4, plus the subnormal step.
          expect(Math.abs(q[i]! - x[i]!)).toBeLessThanOrEqual(
            Math.abs(x[i]!) / 16 + amax * 2 ** -16,
          );
        }
      }
      ck.close();
      r.close();
    });
  }
});

describe('presets', () => {
  it('minimax-m3 with 5 layers keeps 3 dense layers and the real shapes', () => {
    const raw = withNumLayers(PRESETS['minimax-m3']!(), 5);
    const c = parseModelConfig(raw);
    expect(c.moeLayers).toEqual([false, false, false, true, true]);
    expect(c.sparseLayers).toEqual([false, false, false, true, true]);
    expect([c.hiddenSize, c.numHeads, c.numKvHeads, c.headDim, c.rotaryDim]).toEqual([
      6144, 64, 4, 128, 64,
    ]);
    expect([c.numExperts, c.numExpertsPerTok, c.vocabSize, c.ropeTheta]).toEqual([
      128, 4, 200064, 5e6,
    ]);
    expect(c.sparse).toMatchObject({
      blockSize: 128,
      topkBlocks: 16,
      numIndexHeads: 4,
      indexDim: 128,
    });
    const shapes = new Map(modelTensors(c).map((s) => [s.name, s.shape]));
    expect(shapes.get('model.layers.4.block_sparse_moe.experts.127.w2.weight')).toEqual([
      6144, 3072,
    ]);
    expect(shapes.get('model.layers.3.self_attn.index_q_proj.weight')).toEqual([512, 6144]);
    expect(shapes.get('model.layers.2.mlp.gate_proj.weight')).toEqual([12288, 6144]);
    expect(shapes.get('model.layers.0.self_attn.q_proj.weight')).toEqual([8192, 6144]);
    expect(shapes.has('model.layers.2.self_attn.index_q_proj.weight')).toBe(false);
  });

  it('2 layers of minimax-m3 are both dense', () => {
    const c = parseModelConfig(withNumLayers(PRESETS['minimax-m3']!(), 2));
    expect(c.moeLayers).toEqual([false, false]);
    expect(c.sparseLayers).toEqual([false, false]);
  });
});

describe('f32ToE4m3', () => {
  it('round-trips every finite code', () => {
    for (let c = 0; c < 256; c++) {
      if ((c & 0x7f) === 0x7f) continue;
      expect(f32ToE4m3(F8E4M3_TABLE[c]!)).toBe(c);
    }
  });

  it('rounds halfway to even, saturates at 448, keeps NaN', () => {
    expect(f32ToE4m3(1 + 1 / 16)).toBe(0x38); // halfway between 1 and 1.125 -> 1 (even)
    expect(f32ToE4m3(1 + 3 / 16)).toBe(0x3a); // halfway between 1.125 and 1.25 -> 1.25
    expect(f32ToE4m3(2 ** -10)).toBe(0x00); // half the smallest subnormal -> 0 (even)
    expect(f32ToE4m3(3 * 2 ** -10)).toBe(0x02);
    expect(f32ToE4m3(500)).toBe(0x7e);
    expect(f32ToE4m3(-1e9)).toBe(0xfe);
    expect(f32ToE4m3(NaN)).toBe(0x7f);
  });
});
