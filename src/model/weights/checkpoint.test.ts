import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GOLDEN_CASES, goldenCase } from '../../../test/golden-dir.js';
import { openCheckpoint, type Checkpoint } from './checkpoint.js';
import { modelTensors } from './weight-table.js';
import { SafetensorsFile } from './safetensors-file.js';
import { writeSafetensors } from './safetensors-writer.js';

/** e4m3fn by its definition (golden README), independent of the engine's table. */
function e4m3(b: number): number {
  const sign = b & 0x80 ? -1 : 1;
  const e = (b >> 3) & 15;
  const m = b & 7;
  if (e === 15 && m === 7) return NaN;
  return e === 0 ? sign * (m / 8) * 2 ** -6 : sign * (1 + m / 8) * 2 ** (e - 7);
}

/** Raw header + bytes of a single-file checkpoint, parsed by hand. */
function rawFile(path: string): { bytes: Buffer; at: (name: string) => number } {
  const bytes = readFileSync(path);
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString()) as Record<
    string,
    { data_offsets: [number, number] }
  >;
  return { bytes, at: (name) => 8 + n + header[name]!.data_offsets[0] };
}

/** Element (i, j) of a 2-D tensor as a plain array lookup. */
const at = (t: { shape: readonly number[]; data: Float32Array }, i: number, j: number): number =>
  t.data[i * t.shape[1]! + j]!;

describe('golden checkpoints', () => {
  for (const name of GOLDEN_CASES) {
    it(`${name}: every canonical tensor is present and reads with its config shape`, () => {
      const ck = openCheckpoint(goldenCase(name));
      try {
        const specs = modelTensors(ck.config);
        expect(ck.names().sort()).toEqual(specs.map((s) => s.name).sort());
        for (const s of specs) {
          const t = ck.read(s.name, { expectShape: s.shape });
          expect(t.shape).toEqual(s.shape);
          expect(t.data.every(Number.isFinite)).toBe(true);
        }
      } finally {
        ck.close();
      }
    });
  }

  it('tiny-moe keeps F32 router weights exact and BF16 weights widened', () => {
    const ck = openCheckpoint(goldenCase('tiny-moe'));
    const { bytes, at: off } = rawFile(join(goldenCase('tiny-moe'), 'model.safetensors'));
    const gate = ck.read('model.layers.2.block_sparse_moe.gate.weight');
    const g0 = off('model.layers.2.block_sparse_moe.gate.weight');
    expect(gate.data[5]).toBe(bytes.readFloatLE(g0 + 5 * 4));
    const q = ck.read('model.layers.1.self_attn.q_proj.weight');
    const q0 = off('model.layers.1.self_attn.q_proj.weight');
    const bits = bytes.readUInt16LE(q0 + 2 * (3 * 64 + 7)) << 16;
    expect(at(q, 3, 7)).toBe(new Float32Array(new Uint32Array([bits]).buffer)[0]);
    ck.close();
  });
});

describe('MXFP8 dequantization (tiny-mxfp8)', () => {
  const dir = goldenCase('tiny-mxfp8');
  const ck = openCheckpoint(dir);
  const { bytes, at: off } = rawFile(join(dir, 'model.safetensors'));
  afterAll(() => ck.close());

  /** W[i, j] = e4m3(q[i, j]) · 2^(s[i, j // 32] − 127), from the raw bytes. */
  function byHand(name: string, inDim: number, i: number, j: number): number {
    const sCols = Math.ceil(inDim / 32);
    const q = bytes[off(name) + i * inDim + j]!;
    const s = bytes[off(`${name}_scale_inv`) + i * sCols + Math.floor(j / 32)]!;
    return e4m3(q) * 2 ** (s - 127);
  }

  const cases: [string, number, [number, number][]][] = [
    [
      'model.layers.0.self_attn.q_proj.weight',
      64,
      [
        [0, 0],
        [5, 31],
        [5, 32],
        [63, 63],
      ],
    ],
    [
      'model.layers.0.mlp.down_proj.weight',
      96,
      [
        [0, 64],
        [17, 95],
        [63, 40],
      ],
    ],
    [
      'model.layers.2.block_sparse_moe.experts.3.w2.weight',
      32,
      [
        [0, 0],
        [40, 31],
      ],
    ],
    ['model.layers.3.block_sparse_moe.shared_experts.up_proj.weight', 64, [[31, 33]]],
  ];
  for (const [name, inDim, points] of cases) {
    it(`${name.split('.').slice(-3).join('.')} matches q · 2^(s−127) by hand`, () => {
      const t = ck.read(name);
      for (const [i, j] of points) {
        const want = byHand(name, inDim, i, j);
        expect(at(t, i, j)).toBe(want);
      }
      // Not all zero: the check would be vacuous otherwise.
      expect(t.data.some((v) => v !== 0)).toBe(true);
    });
  }

  it('hides scale companions and reports storage', () => {
    expect(ck.names().some((n) => n.endsWith('_scale_inv'))).toBe(false);
    const info = ck.info('model.layers.1.block_sparse_moe.experts.0.w1.weight');
    expect(info.dtype).toBe('F8_E4M3');
    expect(info.scaleName).toBe('model.layers.1.block_sparse_moe.experts.0.w1.weight_scale_inv');
    expect(ck.info('model.layers.1.self_attn.index_q_proj.weight').dtype).toBe('BF16');
  });
});

describe('layout B / VL names (tiny-vl-sharded)', () => {
  it('maps prefixed layout-B names to canonical and reads the same bytes', () => {
    const dir = goldenCase('tiny-vl-sharded');
    const ck = openCheckpoint(dir);
    const cases: [string, string][] = [
      [
        'model.layers.2.block_sparse_moe.experts.0.w3.weight',
        'model.language_model.layers.2.mlp.experts.0.up_proj.weight',
      ],
      [
        'model.layers.1.block_sparse_moe.experts.4.w2.weight',
        'model.language_model.layers.1.mlp.experts.4.down_proj.weight',
      ],
      [
        'model.layers.3.block_sparse_moe.gate.weight',
        'model.language_model.layers.3.mlp.gate.weight',
      ],
      [
        'model.layers.1.self_attn.index_q_norm.weight',
        'model.language_model.layers.1.self_attn.indexer.q_norm.weight',
      ],
      ['model.layers.0.mlp.gate_proj.weight', 'model.language_model.layers.0.mlp.gate_proj.weight'],
      ['lm_head.weight', 'lm_head.weight'],
    ];
    for (const [canon, raw] of cases) {
      const info = ck.info(canon);
      expect(info.rawName).toBe(raw);
      const f = SafetensorsFile.open(info.file);
      expect(ck.read(canon).data).toEqual(f.read(raw).data);
      f.close();
    }
    // layers.2 expert 0 up_proj sits in the second shard, its gate_proj in the first.
    expect(ck.info('model.layers.2.block_sparse_moe.experts.0.w3.weight').file).toMatch(/00002/);
    expect(ck.info('model.layers.2.block_sparse_moe.experts.0.w1.weight').file).toMatch(/00001/);
    ck.close();
  });
});

describe('row / column slices', () => {
  function expectSlice(
    ck: Checkpoint,
    name: string,
    rows: [number, number],
    cols: [number, number],
  ) {
    const full = ck.read(name);
    const part = ck.read(name, { rows, cols });
    expect(part.shape).toEqual([rows[1], cols[1]]);
    for (let i = 0; i < rows[1]; i++)
      for (let j = 0; j < cols[1]; j++)
        expect(at(part, i, j)).toBe(at(full, rows[0] + i, cols[0] + j));
  }

  it('bf16 and f32 slices equal the part of the full tensor', () => {
    const ck = openCheckpoint(goldenCase('tiny-moe'));
    expectSlice(ck, 'model.embed_tokens.weight', [10, 5], [3, 7]);
    expectSlice(ck, 'model.layers.3.block_sparse_moe.gate.weight', [2, 4], [32, 32]);
    const rowsOnly = ck.read('model.layers.0.mlp.down_proj.weight', { rows: [8, 8] });
    expect(rowsOnly.shape).toEqual([8, 96]);
    const bias = ck.read('model.layers.1.block_sparse_moe.e_score_correction_bias', {
      rows: [2, 3],
    });
    expect(bias.data).toEqual(
      ck.read('model.layers.1.block_sparse_moe.e_score_correction_bias').data.slice(2, 5),
    );
    ck.close();
  });

  it('mxfp8 slices crossing scale blocks equal the part of the full tensor', () => {
    const ck = openCheckpoint(goldenCase('tiny-mxfp8'));
    expectSlice(ck, 'model.layers.0.self_attn.q_proj.weight', [5, 20], [17, 30]);
    expectSlice(ck, 'model.layers.0.mlp.down_proj.weight', [0, 64], [40, 50]);
    expectSlice(ck, 'model.layers.3.block_sparse_moe.experts.7.w2.weight', [33, 31], [0, 32]);
    ck.close();
  });

  it('rejects slices outside the tensor, naming it', () => {
    const ck = openCheckpoint(goldenCase('tiny-dense'));
    expect(() => ck.read('model.norm.weight', { rows: [60, 8] })).toThrow(
      /model\.norm\.weight.*rows/,
    );
    expect(() => ck.read('model.norm.weight', { cols: [0, 1] })).toThrow(/no dim 1/);
    ck.close();
  });
});

describe('block FP8 (written by SafetensorsWriter)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'moeserve-fp8-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('dequantizes q · scale_inv[i // bo, j // bi] with partial edge blocks, full and sliced', () => {
    const cfg = JSON.parse(readFileSync(join(goldenCase('tiny-dense'), 'config.json'), 'utf8'));
    cfg.quantization_config = {
      quant_method: 'fp8',
      fmt: 'e4m3',
      activation_scheme: 'dynamic',
      weight_block_size: [16, 32],
    };
    writeFileSync(join(dir, 'config.json'), JSON.stringify(cfg));
    const [out, inn] = [40, 70]; // scale grid [3, 3], last row and col blocks partial
    const q = new Uint8Array(out * inn);
    for (let k = 0; k < q.length; k++) {
      const code = (k * 37 + 11) % 256;
      q[k] = (code & 0x7f) === 0x7f ? 0x3c : code; // every finite code, no NaN
    }
    const scale = new Float32Array([0.5, 1.25, 3e-3, 7, 0.1, 2, 1e-4, 9.5, 0.75]);
    const name = 'model.layers.0.self_attn.q_proj.weight';
    writeSafetensors(join(dir, 'model.safetensors'), [
      { name, dtype: 'F8_E4M3', shape: [out, inn], data: q },
      { name: `${name}_scale_inv`, dtype: 'F32', shape: [3, 3], data: scale },
    ]);
    const ck = openCheckpoint(dir);
    expect(ck.config.quantization).toEqual({ method: 'fp8', blockSize: [16, 32] });
    const t = ck.read(name, { expectShape: [out, inn] });
    for (const [i, j] of [
      [0, 0],
      [15, 31],
      [16, 32],
      [39, 69],
      [20, 65],
      [33, 10],
    ] as const) {
      const want = e4m3(q[i * inn + j]!) * scale[Math.floor(i / 16) * 3 + Math.floor(j / 32)]!;
      expect(at(t, i, j)).toBe(Math.fround(want));
    }
    const part = ck.read(name, { rows: [14, 20], cols: [30, 40] });
    for (let i = 0; i < 20; i++)
      for (let j = 0; j < 40; j++) expect(at(part, i, j)).toBe(at(t, 14 + i, 30 + j));
    ck.close();
  });
  it('finds an MXFP8 scale that sits in another shard than its weight', () => {
    const sharded = join(dir, 'sharded');
    mkdirSync(sharded);
    const cfg = JSON.parse(readFileSync(join(goldenCase('tiny-mxfp8'), 'config.json'), 'utf8'));
    writeFileSync(join(sharded, 'config.json'), JSON.stringify(cfg));
    const name = 'model.language_model.layers.1.mlp.experts.2.down_proj.weight';
    const q = Uint8Array.from({ length: 64 * 40 }, (_, k) => (k * 13) % 0x7e);
    const s = Uint8Array.from({ length: 64 * 2 }, (_, k) => 120 + (k % 9));
    writeSafetensors(join(sharded, 'a.safetensors'), [
      { name, dtype: 'F8_E4M3', shape: [64, 40], data: q },
    ]);
    writeSafetensors(join(sharded, 'b.safetensors'), [
      { name: `${name}_scale_inv`, dtype: 'U8', shape: [64, 2], data: s },
    ]);
    const weightMap = { [name]: 'a.safetensors', [`${name}_scale_inv`]: 'b.safetensors' };
    writeFileSync(
      join(sharded, 'model.safetensors.index.json'),
      JSON.stringify({ weight_map: weightMap }),
    );
    const ck = openCheckpoint(sharded);
    const canon = 'model.layers.1.block_sparse_moe.experts.2.w2.weight';
    expect(ck.names()).toEqual([canon]);
    const t = ck.read(canon, { cols: [30, 10] });
    for (const [i, j] of [
      [0, 0],
      [7, 1],
      [63, 9],
    ] as const) {
      const col = 30 + j;
      const want = e4m3(q[i * 40 + col]!) * 2 ** (s[i * 2 + Math.floor(col / 32)]! - 127);
      expect(at(t, i, j)).toBe(want);
    }
    ck.close();
  });
});
