import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { goldenCase } from '../../../test/golden-dir.js';
import { F8E4M3_TABLE } from '../../tensor/dtype.js';
import { E8M0_TABLE } from './fp8-dequant.js';
import { openCheckpoint, type Checkpoint } from './checkpoint.js';
import type { Fp8Rows } from './fp8-read.js';
import { writeRandomCheckpoint } from './random-checkpoint.js';
import { PRESETS } from './random-presets.js';
import { modelTensors } from './weight-table.js';

const tmp = mkdtempSync(join(tmpdir(), 'moeserve-fp8read-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** What the GPU computes with: code · scale per row and group, in float32. */
function dequant(q: Fp8Rows, rows: number, cols: number): Float32Array {
  const g = Math.ceil(cols / q.scaling.group);
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++)
    for (let c = 0; c < cols; c++) {
      const s = q.scales[r * g + Math.floor(c / q.scaling.group)]!;
      const mul = q.scaling.kind === 'mx' ? E8M0_TABLE[s]! : s;
      out[r * cols + c] = Math.fround(F8E4M3_TABLE[q.codes[r * cols + c]!]! * mul);
    }
  return out;
}

function quantized(ck: Checkpoint): string[] {
  return modelTensors(ck.config)
    .filter((s) => s.quantizable)
    .map((s) => s.name);
}

describe('readFp8: FP8 tensors as stored, scales per row', () => {
  it('tiny-mxfp8: every quantized tensor (whole, row and column slices) dequantizes to read()', () => {
    const ck = openCheckpoint(goldenCase('tiny-mxfp8'));
    try {
      const names = quantized(ck);
      expect(names.length).toBeGreaterThan(20);
      for (const name of names) {
        expect(ck.fp8Scaling(name)).toEqual({ kind: 'mx', group: 32 });
        const [R, C] = ck.info(name).shape as [number, number];
        const whole = ck.readFp8(name);
        expect(dequant(whole, R, C)).toEqual(ck.read(name).data);
        const rows: [number, number] = [Math.floor(R / 2), R - Math.floor(R / 2)];
        expect(dequant(ck.readFp8(name, { rows }), rows[1], C)).toEqual(
          ck.read(name, { rows }).data,
        );
        if (C >= 64) {
          const cols: [number, number] = [32, C - 32];
          expect(dequant(ck.readFp8(name, { cols }), R, cols[1])).toEqual(
            ck.read(name, { cols }).data,
          );
        }
      }
      expect(ck.fp8Scaling('model.embed_tokens.weight')).toBeNull();
    } finally {
      ck.close();
    }
  });

  it('block FP8 (init-random --dtype fp8): codes and per-row repeated scales match read()', () => {
    const dir = join(tmp, 'blk');
    const cfg = { ...PRESETS['tiny']!(), hidden_size: 256, dense_intermediate_size: 384 };
    writeRandomCheckpoint({ config: cfg, outDir: dir, seed: 3, dtype: 'fp8' });
    const ck = openCheckpoint(dir);
    try {
      for (const name of quantized(ck)) {
        expect(ck.fp8Scaling(name)).toEqual({ kind: 'block', group: 128 });
        const [R, C] = ck.info(name).shape as [number, number];
        expect(dequant(ck.readFp8(name), R, C)).toEqual(ck.read(name).data);
        if (R > 130) {
          const rows: [number, number] = [130, R - 130]; // starts inside a row block
          expect(dequant(ck.readFp8(name, { rows }), rows[1], C)).toEqual(
            ck.read(name, { rows }).data,
          );
        }
      }
      const down = 'model.layers.0.mlp.down_proj.weight'; // [256, 384]: 3 column groups
      expect(dequant(ck.readFp8(down, { cols: [128, 256] }), 256, 256)).toEqual(
        ck.read(down, { cols: [128, 256] }).data,
      );
      expect(() => ck.readFp8(down, { cols: [64, 192] })).toThrow(/cut its 128-wide scale groups/);
      expect(() => ck.readFp8('model.embed_tokens.weight')).toThrow(/not F8_E4M3/);
    } finally {
      ck.close();
    }
  });
});
