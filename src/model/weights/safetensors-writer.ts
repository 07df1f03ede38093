import { closeSync, openSync, writeSync } from 'node:fs';
import { numel, shapeStr } from '../../tensor/shape.js';
import { ST_DTYPE_BYTES } from './safetensors-dtype.js';
import { SafetensorsError } from './safetensors-file.js';

/** Dtypes the writer produces. Float dtypes take float32 input; byte dtypes take raw codes. */
export type WritableDType = 'F32' | 'BF16' | 'F8_E4M3' | 'U8';

export interface TensorHeader {
  readonly name: string;
  readonly dtype: WritableDType;
  readonly shape: readonly number[];
}

export interface TensorData extends TensorHeader {
  readonly data: Float32Array | Uint8Array;
}

/** Bytes a tensor occupies in the data section. */
export function tensorBytes(t: TensorHeader): number {
  return numel(t.shape) * ST_DTYPE_BYTES[t.dtype];
}

/**
 * Streams a safetensors file: the header (all names, dtypes and shapes) is written first,
 * then each tensor's elements are appended in header order, in chunks of any size.
 */
export class SafetensorsWriter {
  private current = 0;
  private filled = 0;
  private scratch = new Uint8Array(0);
  private fd: number | null;

  private constructor(
    readonly path: string,
    private readonly tensors: readonly TensorHeader[],
  ) {
    this.fd = openSync(path, 'w');
  }

  static create(
    path: string,
    tensors: readonly TensorHeader[],
    metadata: Record<string, string> = { format: 'pt' },
  ): SafetensorsWriter {
    const w = new SafetensorsWriter(path, tensors);
    w.writeBytes(encodeHeader(tensors, metadata));
    w.skipEmpty();
    return w;
  }

  /** The tensor the next `append` feeds, or null when all are complete. */
  get pending(): TensorHeader | null {
    return this.tensors[this.current] ?? null;
  }

  /** Appends elements of the pending tensor: float32 for F32/BF16, raw bytes for F8_E4M3/U8. */
  append(values: Float32Array | Uint8Array): void {
    const t = this.pending;
    if (!t) throw new SafetensorsError(`${this.path}: append after the last tensor`);
    const isFloat = t.dtype === 'F32' || t.dtype === 'BF16';
    if (isFloat !== values instanceof Float32Array) {
      throw new SafetensorsError(
        `${this.path}: tensor "${t.name}" is ${t.dtype}; pass ${isFloat ? 'a Float32Array' : 'a Uint8Array of codes'}`,
      );
    }
    const left = numel(t.shape) - this.filled;
    if (values.length > left) {
      throw new SafetensorsError(
        `${this.path}: tensor "${t.name}" ${shapeStr(t.shape)} has ${left} elements left, got ${values.length}`,
      );
    }
    this.writeBytes(this.encode(t.dtype, values));
    this.filled += values.length;
    if (this.filled === numel(t.shape)) {
      this.current++;
      this.filled = 0;
      this.skipEmpty();
    }
  }

  /** Closes the file; throws when a tensor was not fully written. */
  close(): void {
    if (this.fd === null) return;
    closeSync(this.fd);
    this.fd = null;
    const t = this.pending;
    if (t) throw new SafetensorsError(`${this.path}: closed before tensor "${t.name}" was written`);
  }

  private skipEmpty(): void {
    while (this.pending && numel(this.pending.shape) === 0) this.current++;
  }

  private encode(dtype: WritableDType, values: Float32Array | Uint8Array): Uint8Array {
    if (dtype === 'F32') return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
    if (dtype !== 'BF16') return values as Uint8Array;
    const n = values.length;
    if (this.scratch.byteLength < n * 2) this.scratch = new Uint8Array(n * 2);
    f32ToBf16Into(values as Float32Array, new Uint16Array(this.scratch.buffer, 0, n));
    return this.scratch.subarray(0, n * 2);
  }

  private writeBytes(bytes: Uint8Array): void {
    if (this.fd === null) throw new SafetensorsError(`${this.path}: write after close`);
    let done = 0;
    while (done < bytes.byteLength)
      done += writeSync(this.fd, bytes, done, bytes.byteLength - done);
  }
}

/** Writes a whole file from in-memory tensors (tests, small checkpoints). */
export function writeSafetensors(
  path: string,
  tensors: readonly TensorData[],
  metadata?: Record<string, string>,
): void {
  const w = SafetensorsWriter.create(path, tensors, metadata);
  try {
    for (const t of tensors) if (t.data.length > 0) w.append(t.data);
  } finally {
    w.close();
  }
}

/** float32 -> bf16 bits, round to nearest even, NaN kept quiet (inlined for multi-GB writes). */
export function f32ToBf16Into(src: Float32Array, dst: Uint16Array): void {
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < src.length; i++) {
    const x = bits[i]!;
    dst[i] =
      (x & 0x7fffffff) > 0x7f800000 ? (x >>> 16) | 0x40 : (x + 0x7fff + ((x >>> 16) & 1)) >>> 16;
  }
}

/** Header bytes: 8-byte length + JSON padded with spaces so the data starts 8-byte aligned. */
function encodeHeader(
  tensors: readonly TensorHeader[],
  metadata: Record<string, string>,
): Uint8Array {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const t of tensors) {
    if (t.name in header) throw new SafetensorsError(`duplicate tensor name "${t.name}"`);
    const bytes = tensorBytes(t);
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const padded = Math.ceil(json.length / 8) * 8;
  const out = Buffer.alloc(8 + padded, 0x20);
  out.writeBigUInt64LE(BigInt(padded), 0);
  json.copy(out, 8);
  return out;
}
