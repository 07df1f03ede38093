import type { RawWeightDType, WeightUploader, WeightUploaderOptions } from '../weight-uploader.js';
import type { Tensor } from '../../tensor/tensor.js';
import { DTYPE_BYTES } from '../../tensor/dtype.js';
import { cuda } from './cuda-tensor.js';
import type { PinnedBuffer } from './device.js';
import * as ew from './elementwise-ops.js';
import { launchKernel } from './kernel-launch.js';
import { resplit, SplitF32Weight } from './split-f32-weight.js';
import { COUNT_NONFINITE } from './kernel-table.js';
import { strideGrid, type OpContext } from './op-context.js';

const B256: [number, number, number] = [256, 1, 1];

/**
 * Checkpoint bytes to the GPU: slots are pinned host buffers (cuMemAllocHost), each filled
 * slot goes up with cuMemcpyHtoDAsync on the backend's stream while the loader reads the next
 * chunks into the other slots. Bytes already in the tensor's storage type (bf16 → bf16,
 * f32 → f32) are copied straight into the tensor; others go through one device staging
 * buffer and the convert kernel; into a split f32 weight (the router) the landed region is
 * re-split into its bf16 parts. Every landed region is scanned by count_nonfinite
 * (kernels/weights.cu) into its load id's counter; the counters are read back once, at `finish`.
 */
export class CudaWeightUploader implements WeightUploader {
  readonly slots: Uint8Array[];
  private readonly pinned: PinnedBuffer[];
  private readonly events: unknown[];
  private readonly recorded: boolean[];
  private readonly staging: number;
  private readonly counts: number;
  private readonly numIds: number;

  constructor(
    private readonly ctx: OpContext,
    private readonly write32: (dst: Tensor, data: Float32Array) => void,
    o: WeightUploaderOptions,
  ) {
    const dev = ctx.dev;
    this.pinned = Array.from({ length: o.numSlots }, () => dev.pinned(o.slotBytes));
    this.slots = this.pinned.map((p) => new Uint8Array(p.view.buffer, p.view.byteOffset, p.bytes));
    this.events = this.pinned.map(() => dev.createEvent(false));
    this.recorded = this.pinned.map(() => false);
    this.staging = dev.malloc(o.slotBytes, 'weight staging');
    this.numIds = Math.max(1, o.numIds);
    this.counts = dev.malloc(4 * this.numIds, 'non-finite counters');
    dev.memsetAsync(this.counts, 0, 4 * this.numIds);
  }

  upload(
    slot: number,
    bytes: number,
    src: RawWeightDType,
    dst: Tensor,
    offset: number,
    id: number,
  ): void {
    const t = cuda(dst, 'weight upload', ['bf16', 'f32']);
    const n = bytes / DTYPE_BYTES[src];
    if (offset + n > t.numel) throw new Error(`weight upload: elements past the tensor's end`);
    const dstPtr = t.ptr + offset * DTYPE_BYTES[t.dtype];
    const dev = this.ctx.dev;
    const host = this.pinned[slot]!.address;
    if (t.dtype === src) {
      dev.uploadAsync(dstPtr, host, bytes);
    } else {
      dev.uploadAsync(this.staging, host, bytes);
      ew.convert(this.ctx, dstPtr, letter(t.dtype), this.staging, letter(src), n);
    }
    dev.record(this.events[slot]);
    this.recorded[slot] = true;
    this.scan(dstPtr, t.dtype as RawWeightDType, n, id);
    if (t instanceof SplitF32Weight) resplit(this.ctx, t, offset, n);
  }

  write(dst: Tensor, data: Float32Array, id: number): void {
    const t = cuda(dst, 'weight write', ['bf16', 'f32']);
    this.write32(t, data);
    this.scan(t.ptr, t.dtype as RawWeightDType, t.numel, id);
  }

  ready(slot: number): void {
    if (this.recorded[slot]) this.ctx.dev.waitEvent(this.events[slot]);
    this.recorded[slot] = false;
  }

  finish(): Int32Array {
    const out = new Int32Array(this.numIds);
    this.ctx.dev.download(out, this.counts);
    return out;
  }

  close(): void {
    const dev = this.ctx.dev;
    dev.sync();
    for (const p of this.pinned) dev.freePinned(p);
    for (const e of this.events) dev.destroyEvent(e);
    dev.free(this.staging);
    dev.free(this.counts);
    this.pinned.length = 0;
    this.slots.length = 0;
  }

  private scan(ptr: number, dtype: RawWeightDType, n: number, id: number): void {
    const shape = { grid: strideGrid(this.ctx, n), block: B256 };
    const args = { x: ptr, n, count: this.counts + 4 * id };
    launchKernel(this.ctx, COUNT_NONFINITE, `count_nonfinite_${letter(dtype)}`, shape, args);
  }
}

function letter(d: string): 'b' | 'f' {
  return d === 'bf16' ? 'b' : 'f';
}
