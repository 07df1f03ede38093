import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../backend/cpu/cpu-backend.js';
import { w8a8Dequantize, W8A8_MIN_ROWS } from '../../tensor/fp8-activation.js';
import type { Tensor } from '../../tensor/tensor.js';
import { loadModel } from '../load-model.js';
import { writeRandomCheckpoint } from './random-checkpoint.js';
import { PRESETS } from './random-presets.js';

const cpu = new CpuBackend();
const dirs: string[] = [];
afterAll(() => {
  cpu.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function checkpoint(dtype: 'fp8' | 'bf16'): string {
  const dir = mkdtempSync(join(tmpdir(), `w8a8-load-${dtype}-`));
  dirs.push(dir);
  const config = {
    ...PRESETS['tiny']!(),
    hidden_size: 256,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 128,
    rotary_dim: 16,
    partial_rotary_factor: 0.125,
    dense_intermediate_size: 256,
    intermediate_size: 128,
    shared_intermediate_size: 128,
    vocab_size: 256,
  };
  writeRandomCheckpoint({ config, outDir: dir, seed: 3, dtype });
  return dir;
}

/** matmul(x, w) at W8A8_MIN_ROWS rows against matmul of x's W8A8 values on an unmarked copy. */
function quantizesX(w: Tensor): boolean {
  const [N, K] = w.shape as [number, number];
  const M = W8A8_MIN_ROWS;
  const x = Float32Array.from({ length: M * K }, (_, i) => Math.sin(i * 0.37) * (1 + (i % 7)));
  const run = (wt: Tensor, xv: Float32Array) => {
    const out = cpu.alloc([M, N], 'f32');
    cpu.matmul(out, cpu.upload(xv, [M, K], 'bf16'), wt);
    return cpu.readF32(out);
  };
  const plain = cpu.upload(cpu.readF32(w), [N, K], 'bf16');
  const got = run(w, x);
  const w8a8 = run(plain, w8a8Dequantize(x.slice(), K));
  const w8a16 = run(plain, x);
  const same = (a: Float32Array, b: Float32Array) => a.every((v, i) => v === b[i]);
  if (same(got, w8a8) && !same(got, w8a16)) return true;
  if (same(got, w8a16)) return false;
  throw new Error('matmul matches neither W8A8 nor W8A16');
}

describe('W8A8 on the CPU: weights loaded dequantized keep the FP8 rule', () => {
  it('a block-FP8 checkpoint: its FP8 linears quantize x; the bf16 LM head and routers do not', async () => {
    const m = await loadModel(checkpoint('fp8'), { backend: cpu });
    const l0 = m.weights.layers[0]!;
    expect(quantizesX(l0.attn.qProj)).toBe(true);
    expect(quantizesX(l0.attn.oProj)).toBe(true);
    expect(quantizesX(m.weights.lmHead)).toBe(false); // stored bf16, as checkpoints keep it
    const moe = m.weights.layers.find((l) => l.moe)!.moe!;
    expect(quantizesX(moe.gate)).toBe(false);
  });

  it('--quantization fp8 on a bf16 checkpoint marks what it quantizes', async () => {
    const dir = checkpoint('bf16');
    const plain = await loadModel(dir, { backend: cpu });
    expect(quantizesX(plain.weights.layers[0]!.attn.qProj)).toBe(false);
    const q = await loadModel(dir, { backend: cpu, quantization: 'fp8' });
    expect(quantizesX(q.weights.layers[0]!.attn.qProj)).toBe(true);
    expect(quantizesX(q.weights.lmHead)).toBe(true);
  });
});
