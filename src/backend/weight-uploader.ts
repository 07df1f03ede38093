import type { Tensor } from '../tensor/tensor.js';

/** Element types a checkpoint's bytes may arrive in without decoding on the host. */
export type RawWeightDType = 'bf16' | 'f32';

/**
 * Moves checkpoint bytes into weight tensors while they are read from disk. The loader reads
 * into `slots` (host staging buffers: pinned memory on CUDA), then hands each filled slot to
 * `upload`; a slot is reused only after `ready(slot)`. Every value that lands is checked: the
 * NaN/Inf count of each load id is returned by `finish`, so a bad tensor fails the load by name.
 * Contract: uploads to different regions may overlap in time; the caller never writes a region
 * twice.
 */
export interface WeightUploader {
  readonly slots: readonly Uint8Array[];
  /**
   * Copies `bytes` of slot `slot` (raw little-endian `src` elements) into elements
   * [offset, offset + n) of `dst` (a tensor or `rows` view), converting to dst's storage type,
   * and counts their non-finite values under `id`.
   */
  upload(
    slot: number,
    bytes: number,
    src: RawWeightDType,
    dst: Tensor,
    offset: number,
    id: number,
  ): void;
  /** Writes host-decoded values (dequantised FP8, F16) into all of `dst`, counted under `id`. */
  write(dst: Tensor, data: Float32Array, id: number): void;
  /** Returns once slot `slot` is no longer read by an upload in flight. */
  ready(slot: number): void;
  /** Waits for every upload; the number of non-finite values per id. */
  finish(): Int32Array;
  /** Releases the staging buffers. */
  close(): void;
}

export interface WeightUploaderOptions {
  readonly slotBytes: number;
  readonly numSlots: number;
  /** Load ids are 0 .. numIds-1. */
  readonly numIds: number;
}

/** Counts NaN/Inf among raw bf16 or f32 elements (exponent all ones). */
export function countNonFinite(bytes: Uint8Array, src: RawWeightDType): number {
  let bad = 0;
  if (src === 'bf16') {
    const u = new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 1);
    for (let i = 0; i < u.length; i++) if ((u[i]! & 0x7f80) === 0x7f80) bad++;
  } else {
    const u = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 2);
    for (let i = 0; i < u.length; i++) if ((u[i]! & 0x7f800000) === 0x7f800000) bad++;
  }
  return bad;
}

/** bf16 or f32 little-endian bytes as float32 values. */
export function rawToF32(bytes: Uint8Array, src: RawWeightDType): Float32Array {
  if (src === 'f32') return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 2);
  const u = new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 1);
  const out = new Float32Array(u.length);
  const bits = new Uint32Array(out.buffer);
  for (let i = 0; i < u.length; i++) bits[i] = u[i]! << 16;
  return out;
}
