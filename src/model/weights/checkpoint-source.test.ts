import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  closeSync,
  rmSync,
  truncateSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../backend/cpu/cpu-backend.js';
import { loadModel, loadModelWithStats } from '../load-model.js';
import { weightBytesByDtype } from '../minimax-m3/weight-bytes.js';
import { loadModelWeights } from '../minimax-m3/weights.js';
import { runForward } from '../run-forward.js';
import { openCheckpoint } from './checkpoint.js';
import { CheckpointWeightSource } from './checkpoint-source.js';
import { writeRandomCheckpoint } from './random-checkpoint.js';
import { PRESETS } from './random-presets.js';
import { ST_DTYPE_BYTES } from './safetensors-dtype.js';
import { numel, type Shape } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';

const tmp = mkdtempSync(join(tmpdir(), 'moeserve-load-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const SINGLE = { parallel: { tpRank: 0, tpSize: 1 }, fuseSharedExperts: false };

function tinyCheckpoint(name: string, dtype: 'bf16' | 'f32' = 'bf16'): string {
  const dir = join(tmp, name);
  writeRandomCheckpoint({ config: PRESETS['tiny']!(), outDir: dir, seed: 5, dtype });
  return dir;
}

/** Overwrites element `index` of a tensor with raw bytes. */
function poke(dir: string, name: string, index: number, bytes: number[]): string {
  const ckpt = openCheckpoint(dir);
  const info = ckpt.info(name);
  ckpt.close();
  const fd = openSync(info.file, 'r+');
  writeSync(fd, Uint8Array.from(bytes), 0, bytes.length, info.offset + index * bytes.length);
  closeSync(fd);
  return info.file;
}

describe('streamed checkpoint loading', () => {
  it('loads what Checkpoint.read returns, bf16 and f32, and reports tensors and bytes', async () => {
    for (const dtype of ['bf16', 'f32'] as const) {
      const dir = tinyCheckpoint(`same-${dtype}`, dtype);
      const cpu = new CpuBackend();
      const { model, stats } = await loadModelWithStats(dir, { backend: cpu });
      const ckpt = openCheckpoint(dir);
      const l1 = model.weights.layers[1]!.moe!;
      const w3 = ckpt.read('model.layers.1.block_sparse_moe.experts.5.w3.weight').data;
      const I = w3.length / model.cfg.hiddenSize;
      // Expert 5's up rows sit after its gate rows in the gate|up slab.
      const slab = cpu.readF32(cpu.rows(l1.experts.gateUp, 5, 1));
      expect(slab.subarray(I * model.cfg.hiddenSize)).toEqual(w3);
      expect(cpu.readF32(model.weights.lmHead)).toEqual(ckpt.read('lm_head.weight').data);
      expect(stats.tensors).toBe(ckpt.names().length);
      const stored = (n: string) => numel(ckpt.info(n).shape) * ST_DTYPE_BYTES[ckpt.info(n).dtype];
      expect(stats.bytes).toBe(ckpt.names().reduce((n, k) => n + stored(k), 0));
      ckpt.close();
    }
  });

  it('a file truncated after it was opened fails naming the file and the tensor', async () => {
    const dir = tinyCheckpoint('truncated');
    const ckpt = openCheckpoint(dir);
    const info = ckpt.info('lm_head.weight');
    const src = new CheckpointWeightSource(ckpt, new CpuBackend());
    loadModelWeights(src, new CpuBackend(), SINGLE);
    truncateSync(info.file, info.offset + 100);
    await expect(src.load()).rejects.toThrow(
      new RegExp(
        `^${info.file}: tensor "[^"]+": unexpected end of file at byte \\d+ \\(truncated\\?\\)$`,
      ),
    );
    ckpt.close();
  });

  it('a NaN in a bf16 tensor or an Inf in an f32 one fails the load naming file and tensor', async () => {
    const bf = tinyCheckpoint('nan');
    const f1 = poke(bf, 'model.layers.2.self_attn.o_proj.weight', 77, [0xc0, 0x7f]); // bf16 NaN
    await expect(loadModel(bf, { backend: new CpuBackend() })).rejects.toThrow(
      `${f1}: tensor "model.layers.2.self_attn.o_proj.weight" holds 1 non-finite values (NaN or Inf)`,
    );
    const f32 = tinyCheckpoint('inf', 'f32');
    const name = 'model.layers.1.block_sparse_moe.experts.3.w2.weight';
    const f2 = poke(f32, name, 5, [0, 0, 0x80, 0x7f]); // +Inf
    poke(f32, name, 9, [0, 0, 0x80, 0xff]); // -Inf
    await expect(loadModel(f32, { backend: new CpuBackend() })).rejects.toThrow(
      `${f2}: tensor "${name}" holds 2 non-finite values (NaN or Inf)`,
    );
  });
});

describe('the MoE routers', () => {
  /** A CPU backend that offers allocF32Weight, recording what it is asked for. */
  class RouterCpu extends CpuBackend {
    readonly asked: number[][] = [];
    allocF32Weight(shape: Shape): Tensor {
      this.asked.push([...shape]);
      return this.alloc(shape, 'f32');
    }
  }

  it('are allocated, and alone, through allocF32Weight where a backend has it', async () => {
    const backend = new RouterCpu();
    const model = await loadModel(tinyCheckpoint('routers'), { backend });
    const { numExperts: E, hiddenSize: D } = model.cfg;
    const moe = model.weights.layers.filter((l) => l.moe !== null);
    expect(moe.length).toBeGreaterThan(0);
    expect(backend.asked).toEqual(moe.map(() => [E, D]));
  });

  it("count a backend's split parts as bfloat16 weight memory", async () => {
    // The CPU keeps bf16 weights as f32, so the parts are all the bfloat16 there is.
    class SplitCpu extends RouterCpu {
      override allocF32Weight(shape: Shape): Tensor {
        return Object.assign(super.allocF32Weight(shape), { partElements: 3 * numel(shape) });
      }
    }
    const backend = new SplitCpu();
    const model = await loadModel(tinyCheckpoint('router-bytes'), { backend });
    const { numExperts: E, hiddenSize: D } = model.cfg;
    const numMoe = model.weights.layers.filter((l) => l.moe !== null).length;
    const bytes = weightBytesByDtype(model.weights, backend);
    expect(bytes['bfloat16']).toBe(numMoe * 3 * E * D * 2);
  });

  it('a NaN in a router fails the load naming file and tensor', async () => {
    const dir = tinyCheckpoint('router-nan', 'f32');
    const name = 'model.layers.1.block_sparse_moe.gate.weight';
    const file = poke(dir, name, 3, [0, 0, 0xc0, 0x7f]); // f32 NaN
    await expect(loadModel(dir, { backend: new RouterCpu() })).rejects.toThrow(
      `${file}: tensor "${name}" holds 1 non-finite values (NaN or Inf)`,
    );
  });
});

describe('--load-format dummy', () => {
  const dir = join(tmp, 'config-only');
  mkdirSync(dir, { recursive: true });
  copyFileSync(join(tinyCheckpoint('for-config'), 'config.json'), join(dir, 'config.json'));
  const ids = [3, 17, 200, 42, 9];

  it('needs only config.json, gives finite logits, and is deterministic for a seed', async () => {
    const run = async (seed: number) =>
      (
        await runForward(
          await loadModel(dir, { backend: new CpuBackend(), loadFormat: 'dummy', dummySeed: seed }),
          ids,
        )
      ).logits;
    const a = await run(1);
    expect(a.flat().every(Number.isFinite)).toBe(true);
    expect(await run(1)).toEqual(a);
    expect(await run(2)).not.toEqual(a);
  });

  it('has the checkpoint shapes and init-random scales', async () => {
    const { model, stats } = await loadModelWithStats(dir, {
      backend: new CpuBackend(),
      loadFormat: 'dummy',
    });
    const ref = await loadModel(tinyCheckpoint('shapes'), { backend: new CpuBackend() });
    expect(stats.dummy).toBe(true);
    const cpu = model.backend;
    const std = (t: Parameters<typeof cpu.readF32>[0]) => {
      const x = cpu.readF32(t);
      return Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length);
    };
    const D = model.cfg.hiddenSize;
    const w = model.weights;
    expect(w.embed.shape).toEqual(ref.weights.embed.shape);
    expect(w.layers[1]!.moe!.experts.gateUp.shape).toEqual(
      ref.weights.layers[1]!.moe!.experts.gateUp.shape,
    );
    expect(std(w.embed)).toBeCloseTo(1, 1);
    expect(std(w.layers[0]!.attn.qProj) * Math.sqrt(D)).toBeCloseTo(1, 1);
    expect(std(w.layers[0]!.inputNorm)).toBeCloseTo(0.05, 2);
    // bf16 weights hold bf16 values (as the GPU stores them): the low 16 bits are zero.
    const bits = new Uint32Array(cpu.readF32(w.layers[0]!.attn.qProj).buffer);
    expect(bits.every((b) => (b & 0xffff) === 0)).toBe(true);
  });
});
