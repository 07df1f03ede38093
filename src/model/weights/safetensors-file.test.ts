import { cpSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { goldenCase } from '../../../test/golden-dir.js';
import { openCheckpoint } from './checkpoint.js';
import { SafetensorsFile } from './safetensors-file.js';
import { SafetensorsWriter, writeSafetensors } from './safetensors-writer.js';

const tmp = mkdtempSync(join(tmpdir(), 'moeserve-st-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let caseNo = 0;
/** A writable copy of a golden case. */
function copyCase(name: string): string {
  const dir = join(tmp, `${name}-${caseNo++}`);
  cpSync(goldenCase(name), dir, { recursive: true });
  return dir;
}

/** Rewrites bytes of the header in place (same length, so offsets stay valid). */
function patchHeader(file: string, from: string, to: string): void {
  expect(to.length).toBe(from.length);
  const bytes = readFileSync(file);
  const n = Number(bytes.readBigUInt64LE(0));
  const header = bytes.subarray(8, 8 + n).toString('latin1');
  expect(header.includes(from)).toBe(true);
  bytes.write(header.replace(from, to), 8, 'latin1');
  writeFileSync(file, bytes);
}

describe('SafetensorsWriter + SafetensorsFile', () => {
  it('round-trips F32, BF16, F8_E4M3 and U8 with an aligned header and pt metadata', () => {
    const path = join(tmp, 'rt.safetensors');
    const f32 = Float32Array.from({ length: 12 }, (_, i) => i * 0.37 - 2);
    const bf = new Float32Array([1, -2.5, 3.140625, 1e-3, 65504, -0, 1 + 2 ** -8, 1 + 3 * 2 ** -8]);
    writeSafetensors(path, [
      { name: 'a', dtype: 'F32', shape: [3, 4], data: f32 },
      { name: 'b', dtype: 'BF16', shape: [8], data: bf },
      {
        name: 'c',
        dtype: 'F8_E4M3',
        shape: [2, 2],
        data: new Uint8Array([0x38, 0xb8, 0x7e, 0x01]),
      },
      { name: 'd', dtype: 'U8', shape: [2], data: new Uint8Array([127, 130]) },
      { name: 'empty', dtype: 'F32', shape: [0, 4], data: new Float32Array(0) },
    ]);
    const headerLen = Number(readFileSync(path).readBigUInt64LE(0));
    expect(headerLen % 8).toBe(0);
    const f = SafetensorsFile.open(path);
    expect(f.metadata).toEqual({ format: 'pt' });
    expect(f.read('a').data).toEqual(f32);
    // Nearest bf16; halfway cases go to the even mantissa.
    expect([...f.read('b').data]).toEqual([
      1,
      -2.5,
      3.140625,
      0.00099945068359375,
      65536,
      -0,
      1,
      1 + 2 ** -6,
    ]);
    expect([...f.read('c').data]).toEqual([1, -1, 448, 2 ** -9]);
    expect([...f.read('d').data]).toEqual([127, 130]);
    expect(f.read('empty').shape).toEqual([0, 4]);
    expect(f.read('a', { rows: [1, 2], cols: [1, 2] }).data).toEqual(
      new Float32Array([f32[5]!, f32[6]!, f32[9]!, f32[10]!]),
    );
    f.close();
  });

  it('reads column slices of wide tensors row by row', () => {
    const path = join(tmp, 'wide.safetensors');
    const [rows, cols] = [600, 2000]; // 4.8 MB, above the block-read limit
    const w = SafetensorsWriter.create(path, [{ name: 'w', dtype: 'F32', shape: [rows, cols] }]);
    for (let r = 0; r < rows; r++)
      w.append(Float32Array.from({ length: cols }, (_, c) => r * cols + c));
    w.close();
    const f = SafetensorsFile.open(path);
    const t = f.read('w', { rows: [10, 500], cols: [1000, 7] });
    expect(t.shape).toEqual([500, 7]);
    expect(t.data[0]).toBe(10 * cols + 1000);
    expect(t.data[499 * 7 + 6]).toBe(509 * cols + 1006);
    f.close();
  });

  it('rejects writes that do not match the header', () => {
    const w = SafetensorsWriter.create(join(tmp, 'bad.safetensors'), [
      { name: 'x', dtype: 'BF16', shape: [2] },
    ]);
    expect(() => w.append(new Uint8Array(2))).toThrow(/"x" is BF16/);
    expect(() => w.append(new Float32Array(3))).toThrow(/2 elements left/);
    expect(() => w.close()).toThrow(/closed before tensor "x"/);
  });
});

describe('corrupted checkpoints name the file and the tensor', () => {
  it('truncated file', () => {
    const dir = copyCase('tiny-dense');
    const file = join(dir, 'model.safetensors');
    truncateSync(file, readFileSync(file).length - 100);
    expect(() => openCheckpoint(dir)).toThrow(
      new RegExp(`${file}: tensor "[^"]+": data .* beyond the end of the file.*truncated`),
    );
  });

  it('file cut inside the header', () => {
    const dir = copyCase('tiny-dense');
    const file = join(dir, 'model.safetensors');
    truncateSync(file, 200);
    expect(() => openCheckpoint(dir)).toThrow(new RegExp(`${file}: header length .* truncated`));
  });

  it('renamed tensor', () => {
    const dir = copyCase('tiny-dense');
    const file = join(dir, 'model.safetensors');
    patchHeader(file, '"model.norm.weight"', '"model.norx.weight"');
    const ck = openCheckpoint(dir);
    expect(() => ck.read('model.norm.weight')).toThrow(
      `${file}: tensor "model.norm.weight" not found`,
    );
    ck.close();
  });

  it('wrong shape: expected by the caller, and inconsistent with the data offsets', () => {
    const dir = copyCase('tiny-dense');
    const file = join(dir, 'model.safetensors');
    const ck = openCheckpoint(dir);
    expect(() =>
      ck.read('model.layers.1.self_attn.k_proj.weight', { expectShape: [64, 64] }),
    ).toThrow(
      `${file}: tensor "model.layers.1.self_attn.k_proj.weight" has shape [32, 64], expected [64, 64]`,
    );
    ck.close();
    patchHeader(file, '"shape":[32,64]', '"shape":[16,64]');
    expect(() => openCheckpoint(dir)).toThrow(
      new RegExp(
        `${file}: tensor ".*k_proj.weight": data_offsets .* hold 8192 bytes, but F32 \\[16, 64\\] needs 4096`,
      ),
    );
  });

  it('unknown dtype and bad header JSON', () => {
    const dir = copyCase('tiny-dense');
    const file = join(dir, 'model.safetensors');
    patchHeader(file, '"dtype":"F32"', '"dtype":"F33"');
    expect(() => openCheckpoint(dir)).toThrow(
      new RegExp(`${file}: tensor "[^"]+": unknown dtype "F33"`),
    );
    patchHeader(file, '"dtype":"F33"', '"dtype"}"F33"');
    expect(() => openCheckpoint(dir)).toThrow(new RegExp(`${file}: header is not valid JSON`));
  });

  it('index that maps a tensor to the wrong shard, and a missing FP8 scale', () => {
    const dir = copyCase('tiny-vl-sharded');
    const index = join(dir, 'model.safetensors.index.json');
    const json = JSON.parse(readFileSync(index, 'utf8'));
    json.weight_map['lm_head.weight'] = 'model-00001-of-00002.safetensors';
    writeFileSync(index, JSON.stringify(json));
    expect(() => openCheckpoint(dir)).toThrow(
      /index\.json: tensor "lm_head.weight" is mapped to .*model-00001-of-00002\.safetensors, which does not contain it/,
    );
    const mx = copyCase('tiny-mxfp8');
    const file = join(mx, 'model.safetensors');
    patchHeader(
      file,
      '"model.layers.0.self_attn.q_proj.weight_scale_inv"',
      '"model.layers.0.self_attn.q_proj.weight_scale_xxx"',
    );
    const ck = openCheckpoint(mx);
    expect(() => ck.read('model.layers.0.self_attn.q_proj.weight')).toThrow(
      `${file}: F8_E4M3 tensor "model.layers.0.self_attn.q_proj.weight" has no model.layers.0.self_attn.q_proj.weight_scale_inv companion`,
    );
    ck.close();
  });
});
