import type { Backend } from './backend.js';
import { numel } from '../tensor/shape.js';
import type { Tensor } from '../tensor/tensor.js';
import {
  countNonFinite,
  rawToF32,
  type RawWeightDType,
  type WeightUploader,
  type WeightUploaderOptions,
} from './weight-uploader.js';

/**
 * The uploader of a backend with no staging of its own (the CPU): plain host slots, values
 * decoded to float32 on the host and written with `Backend.write`, NaN/Inf counted in JS.
 * Uploads are synchronous, so a slot is ready as soon as `upload` returns.
 */
export class HostWeightUploader implements WeightUploader {
  readonly slots: Uint8Array[];
  private readonly counts: Int32Array;

  constructor(
    private readonly backend: Backend,
    o: WeightUploaderOptions,
  ) {
    this.slots = Array.from({ length: o.numSlots }, () => new Uint8Array(o.slotBytes));
    this.counts = new Int32Array(o.numIds);
  }

  upload(
    slot: number,
    bytes: number,
    src: RawWeightDType,
    dst: Tensor,
    offset: number,
    id: number,
  ): void {
    const raw = this.slots[slot]!.subarray(0, bytes);
    this.counts[id]! += countNonFinite(raw, src);
    const values = rawToF32(raw, src);
    const flat = this.backend.view(dst, [numel(dst.shape)]);
    this.backend.write(this.backend.rows(flat, offset, values.length), values);
  }

  write(dst: Tensor, data: Float32Array, id: number): void {
    let bad = 0;
    for (let i = 0; i < data.length; i++) if (!Number.isFinite(data[i]!)) bad++;
    this.counts[id]! += bad;
    this.backend.write(dst, data);
  }

  ready(): void {}

  finish(): Int32Array {
    return this.counts.slice();
  }

  close(): void {
    this.slots.length = 0;
  }
}
