import { performance } from 'node:perf_hooks';
import type { Backend } from '../../backend/backend.js';
import { HostWeightUploader } from '../../backend/host-weight-uploader.js';
import type { RawWeightDType, WeightUploader } from '../../backend/weight-uploader.js';
import type { ModelConfig } from '../../config/model-config.js';
import { numel, shapeStr } from '../../tensor/shape.js';
import { isFp8Weight, type Fp8Scaling, type Fp8Weight } from '../../tensor/fp8-weight.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { Checkpoint, ReadOptions } from './checkpoint.js';
import { FileReaders } from './file-readers.js';
import type { LoadProgress } from './load-progress.js';
import { planReadChunks, type ReadChunk, type StoredTensor } from './read-chunks.js';
import { ST_DTYPE_BYTES, type StDType } from './safetensors-dtype.js';
import { SafetensorsError } from './safetensors-file.js';
import type { LoadStats, WeightSource } from './weight-source.js';

/** Staging: 8 buffers of up to 64 MiB keep reads in flight while earlier chunks are copied. */
const SLOT_BYTES = 64 * 2 ** 20;
const NUM_SLOTS = 8;

/** Checkpoint dtypes whose bytes go to the backend as they are (converted there if needed). */
const RAW: Partial<Record<StDType, RawWeightDType>> = { BF16: 'bf16', F32: 'f32' };

interface Item {
  readonly name: string;
  readonly o: ReadOptions;
  readonly dst: Tensor;
}

/** One unit of work: a chunk of a raw tensor, or a whole tensor decoded on the host (FP8, F16). */
type Task =
  | { kind: 'raw'; id: number; t: StoredTensor; c: ReadChunk; src: RawWeightDType; dst: Tensor }
  | { kind: 'host'; id: number; item: Item; bytes: number }
  | { kind: 'fp8'; id: number; item: Item; dst: Fp8Weight; bytes: number };

/**
 * Weights from a checkpoint on disk, streamed: several chunk reads in flight (libuv thread
 * pool) into the backend's staging slots, each slot handed to the backend as soon as it is
 * full (CUDA: pinned memory, async copy, conversion and NaN/Inf scan on the device), so disk
 * reads overlap the copies. BF16 and F32 bytes are never decoded in JS on CUDA; FP8 (which
 * needs its scales) and F16 are decoded on the host. Each rank reads only its slice.
 */
export class CheckpointWeightSource implements WeightSource {
  private readonly items: Item[] = [];

  constructor(
    private readonly ckpt: Checkpoint,
    private readonly backend: Backend,
  ) {}

  get config(): ModelConfig {
    return this.ckpt.config;
  }

  has(name: string): boolean {
    return this.ckpt.has(name);
  }

  fp8Scaling(name: string): Fp8Scaling | null {
    return this.ckpt.has(name) ? this.ckpt.fp8Scaling(name) : null;
  }

  fill(dst: Tensor, name: string, o: ReadOptions): void {
    this.items.push({ name, o, dst });
  }

  async load(progress?: LoadProgress): Promise<LoadStats> {
    const t0 = performance.now();
    const { tasks, labels, bytes, slotBytes } = this.plan();
    progress?.start(bytes, this.items.length);
    const numSlots = Math.max(1, Math.min(NUM_SLOTS, tasks.length));
    const o = { slotBytes, numSlots, numIds: this.items.length };
    const up = this.backend.weightUploader?.(o) ?? new HostWeightUploader(this.backend, o);
    const readers = new FileReaders();
    try {
      let next = 0;
      const worker = async (slot: number): Promise<void> => {
        for (let i = next++; i < tasks.length; i = next++) {
          const task = tasks[i]!;
          await this.run(task, slot, up, readers);
          progress?.advance(task.kind === 'raw' ? task.c.outBytes : task.bytes);
        }
      };
      await Promise.all(Array.from({ length: numSlots }, (_, s) => worker(s)));
      const counts = up.finish();
      const bad = counts.findIndex((n) => n > 0);
      if (bad >= 0) {
        const l = labels[bad]!;
        throw new SafetensorsError(
          `${l.file}: tensor ${l.label} holds ${counts[bad]} non-finite values (NaN or Inf)`,
        );
      }
    } finally {
      up.close();
      await readers.close();
    }
    const stats = {
      tensors: this.items.length,
      bytes,
      seconds: (performance.now() - t0) / 1000,
      dummy: false,
    };
    progress?.done(stats);
    return stats;
  }

  private async run(task: Task, slot: number, up: WeightUploader, readers: FileReaders) {
    if (task.kind === 'fp8') {
      this.writeFp8(task.item, task.dst);
      return;
    }
    if (task.kind === 'host') {
      const h = this.ckpt.read(task.item.name, task.item.o);
      up.write(task.item.dst, h.data, task.id);
      return;
    }
    up.ready(slot);
    const data = await readers.readChunk(task.t, task.c, up.slots[slot]!);
    const offset = task.c.outOffset / ST_DTYPE_BYTES[task.src === 'bf16' ? 'BF16' : 'F32'];
    up.upload(slot, data.byteLength, task.src, task.dst, offset, task.id);
  }

  /** Codes and scales as stored into an FP8 weight; NaN codes or non-finite scales fail the load. */
  private writeFp8(item: Item, dst: Fp8Weight): void {
    const ops = this.backend.fp8;
    if (!ops) throw new Error('load: an FP8 weight on a backend without FP8 weights');
    const q = this.ckpt.readFp8(item.name, item.o);
    const info = this.ckpt.info(item.name);
    if (q.scaling.kind !== dst.scaling.kind || q.scaling.group !== dst.scaling.group)
      throw new SafetensorsError(
        `${info.file}: tensor "${info.rawName}" is ${q.scaling.kind} FP8 with groups of ${q.scaling.group}, but is loaded into ${dst.scaling.kind} FP8 with groups of ${dst.scaling.group} (all parts of a fused weight must be stored alike)`,
      );
    let bad = 0;
    for (const c of q.codes) if ((c & 0x7f) === 0x7f) bad++;
    for (const s of q.scales) if (q.scaling.kind === 'mx' ? s === 255 : !Number.isFinite(s)) bad++;
    if (bad > 0)
      throw new SafetensorsError(
        `${info.file}: tensor "${info.rawName}" holds ${bad} non-finite values (NaN codes or scales)`,
      );
    ops.write(dst, q.codes, q.scales);
  }

  /** Checks every item (shape, element count) and splits raw ones into slot-sized chunks. */
  private plan() {
    const tasks: Task[] = [];
    const labels: { file: string; label: string }[] = [];
    let bytes = 0;
    let largest = 0;
    const infos = this.items.map((item) => this.ckpt.info(item.name));
    for (const info of infos)
      largest = Math.max(largest, numel(info.shape) * ST_DTYPE_BYTES[info.dtype]);
    const slotBytes = Math.max(4096, Math.min(SLOT_BYTES, Math.ceil(largest / 4096) * 4096));
    this.items.forEach((item, id) => {
      const info = infos[id]!;
      const label =
        info.rawName === item.name ? `"${info.rawName}"` : `"${info.rawName}" (${item.name})`;
      labels.push({ file: info.file, label });
      if (item.o.expectShape) this.ckpt.checkShape(item.name, item.o.expectShape);
      const t: StoredTensor = {
        file: info.file,
        label,
        offset: info.offset,
        shape: info.shape,
        elemBytes: ST_DTYPE_BYTES[info.dtype],
      };
      const p = planReadChunks(t, { rows: item.o.rows, cols: item.o.cols }, slotBytes);
      const n = numel(p.shape);
      if (n !== numel(item.dst.shape))
        throw new Error(
          `load: ${label} slice ${shapeStr(p.shape)} does not fill a ${shapeStr(item.dst.shape)} tensor`,
        );
      bytes += p.bytes;
      if (isFp8Weight(item.dst)) {
        if (info.dtype !== 'F8_E4M3')
          throw new SafetensorsError(
            `${info.file}: tensor ${label} is ${info.dtype}, but the other parts of its fused FP8 weight are F8_E4M3`,
          );
        tasks.push({ kind: 'fp8', id, item, dst: item.dst, bytes: p.bytes });
        return;
      }
      const src = RAW[info.dtype];
      if (!src) tasks.push({ kind: 'host', id, item, bytes: p.bytes });
      else for (const c of p.chunks) tasks.push({ kind: 'raw', id, t, c, src, dst: item.dst });
    });
    return { tasks, labels, bytes, slotBytes };
  }
}
