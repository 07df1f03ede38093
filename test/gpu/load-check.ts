/**
 * Loading on CUDA checked against the CPU backend (run by gpu-check.ts):
 * - streamed bf16 and f32 checkpoints (pinned ring, direct copies and on-device conversion,
 *   CUDA f32 mode, a tensor-parallel slice with column cuts) give bit-identical weights;
 * - NaN / +Inf / -Inf planted in bf16 and f32 tensors are counted exactly by the device scan
 *   (kernels/weights.cu) and the load fails with one line naming the file and the tensor;
 * - `--load-format dummy` builds the same weights on the GPU as on the CPU (same hash fill).
 */
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend } from '../../src/backend/backend.js';
import type { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { loadModel, type LoadModelOptions } from '../../src/model/load-model.js';
import { loadModelWeights, type ModelWeights } from '../../src/model/minimax-m3/weights.js';
import { CheckpointWeightSource } from '../../src/model/weights/checkpoint-source.js';
import { SINGLE_RANK } from '../../src/parallel/parallel-layout.js';
import { openCheckpoint } from '../../src/model/weights/checkpoint.js';
import { writeRandomCheckpoint } from '../../src/model/weights/random-checkpoint.js';
import { PRESETS } from '../../src/model/weights/random-presets.js';
import { bf16ToF32, f32ToBf16 } from '../../src/tensor/dtype.js';
import type { Tensor } from '../../src/tensor/tensor.js';
import type { Row } from './check-util.js';

/** Every tensor of a weight tree, depth first, with its path. */
function tensors(w: unknown, path = ''): [string, Tensor][] {
  if (w === null || typeof w !== 'object') return [];
  if ('dtype' in w && 'shape' in w) return [[path, w as Tensor]];
  return Object.entries(w).flatMap(([k, v]) => tensors(v, path ? `${path}.${k}` : k));
}

/** Tensors whose bits differ between a CPU load (a) and a load on another backend (b). */
function differing(a: Backend, wa: ModelWeights, b: Backend, wb: ModelWeights): string[] {
  const tb = new Map(tensors(wb));
  const bad: string[] = [];
  for (const [k, t] of tensors(wa)) {
    const other = tb.get(k)!;
    const y = b.readF32(other);
    // A bf16 tensor holds the CPU's float32 values rounded to bf16 (f32 checkpoints).
    const x =
      other.dtype === 'bf16' ? a.readF32(t).map((v) => bf16ToF32(f32ToBf16(v))) : a.readF32(t);
    if (x.length !== y.length || !Buffer.from(x.buffer).equals(Buffer.from(y.buffer))) bad.push(k);
  }
  return bad;
}

function poke(dir: string, name: string, index: number, bytes: number[]): string {
  const ckpt = openCheckpoint(dir);
  const info = ckpt.info(name);
  ckpt.close();
  const fd = openSync(info.file, 'r+');
  writeSync(fd, Uint8Array.from(bytes), 0, bytes.length, info.offset + index * bytes.length);
  closeSync(fd);
  return info.file;
}

/** This rank's weights as `loadModel` builds them (any layout: no communicator needed). */
async function weightsOf(dir: string, backend: Backend, o: Partial<LoadModelOptions>) {
  if (o.loadFormat === 'dummy') return (await loadModel(dir, { ...o, backend })).weights;
  const ckpt = openCheckpoint(dir);
  try {
    const src = new CheckpointWeightSource(ckpt, backend);
    const w = loadModelWeights(src, backend, {
      parallel: o.parallel ?? SINGLE_RANK,
      fuseSharedExperts: false,
    });
    await src.load();
    return w;
  } finally {
    ckpt.close();
  }
}

async function same(
  label: string,
  dir: string,
  cpu: CpuBackend,
  gpu: Backend,
  o: Partial<LoadModelOptions> = {},
): Promise<Row> {
  const ref = await weightsOf(dir, cpu, o);
  const got = await weightsOf(dir, gpu, o);
  const bad = differing(cpu, ref, gpu, got);
  return {
    check: `load ${label}: weights equal the CPU load`,
    value: bad.length === 0 ? 'bit-equal' : `${bad.length} differ: ${bad.slice(0, 3).join(', ')}`,
    limit: 'bit-equal',
    pass: bad.length === 0,
  };
}

async function failsWith(label: string, dir: string, gpu: Backend, want: string): Promise<Row> {
  const got = await loadModel(dir, { backend: gpu }).then(
    () => 'loaded',
    (e: Error) => e.message,
  );
  return { check: `load ${label}`, value: got, limit: want, pass: got === want };
}

export async function checkLoading(cpu: CpuBackend, gpu: Backend, gpu32: Backend): Promise<Row[]> {
  const tmp = mkdtempSync(join(tmpdir(), 'moeserve-load-check-'));
  try {
    const tiny = PRESETS['tiny']!();
    const ck = (name: string, dtype: 'bf16' | 'f32') => {
      const dir = join(tmp, name);
      writeRandomCheckpoint({ config: tiny, outDir: dir, seed: 11, dtype });
      return dir;
    };
    const bf = ck('bf16', 'bf16');
    const f32 = ck('f32', 'f32');
    const tp = { parallel: { tpRank: 1, tpSize: 2 } };
    const rows = [
      await same('bf16 checkpoint', bf, cpu, gpu),
      await same('f32 checkpoint (converted on the GPU)', f32, cpu, gpu),
      await same('bf16 checkpoint, CUDA f32 mode', bf, cpu, gpu32),
      await same('bf16 checkpoint, tp rank 1 of 2', bf, cpu, gpu, tp),
      await same('dummy (GPU fill = CPU fill)', bf, cpu, gpu, {
        loadFormat: 'dummy',
        dummySeed: 3,
      }),
    ];
    const o = 'model.layers.2.self_attn.o_proj.weight';
    const fileB = poke(bf, o, 77, [0xc0, 0x7f]); // NaN
    poke(bf, o, 78, [0x80, 0xff]); // -Inf
    rows.push(
      await failsWith(
        'bf16 NaN + -Inf',
        bf,
        gpu,
        `${fileB}: tensor "${o}" holds 2 non-finite values (NaN or Inf)`,
      ),
    );
    const w2 = 'model.layers.1.block_sparse_moe.experts.3.w2.weight';
    const fileF = poke(f32, w2, 5, [0, 0, 0x80, 0x7f]); // +Inf
    rows.push(
      await failsWith(
        'f32 +Inf',
        f32,
        gpu,
        `${fileF}: tensor "${w2}" holds 1 non-finite values (NaN or Inf)`,
      ),
    );
    return rows;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
