import { closeSync, openSync, writeSync } from 'node:fs';
import { numel, shapeStr } from '../../tensor/shape.js';
import { f32ToBf16Into } from '../../tensor/dtype.js';
import { ST_DTYPE_BYTES } from './safetensors-dtype.js';
import { SafetensorsError } from './safetensors-file.js';

/** Dtypes the writer produces. Float dtypes take float32 (BF16 also raw bits); byte dtypes take codes. */
export type WritableDType = 'F32' | 'BF16' | 'F8_E4M3' | 'U8';

export interface TensorHeader {
  readonly name: string;
  readonly dtype: WritableDType;
  readonly shape: readonly number[];
}

export interface TensorData extends TensorHeader {
  readonly data: TensorValues;
}

/** float32 values (F32, BF16), raw bf16 bits (BF16), or raw byte codes (F8_E4M3, U8). */
export type TensorValues = Float32Array | Uint16Array | Uint8Array;

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

  /** Appends elements of the pending tensor (see TensorValues for what each dtype takes). */
  append(values: TensorValues): void {
    const t = this.pending;
    if (!t) throw new SafetensorsError(`${this.path}: append after the last tensor`);
    if (!accepts(t.dtype, values)) {
      throw new SafetensorsError(
        `${this.path}: tensor "${t.name}" is ${t.dtype}; pass ${ACCEPTS[t.dtype]}`,
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

  private encode(dtype: WritableDType, values: TensorValues): Uint8Array {
    if (dtype !== 'BF16' || !(values instanceof Float32Array)) {
      return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
    }
    const n = values.length;
    if (this.scratch.byteLength < n * 2) this.scratch = new Uint8Array(n * 2);
    f32ToBf16Into(values, new Uint16Array(this.scratch.buffer, 0, n));
    return this.scratch.subarray(0, n * 2);
  }

  private writeBytes(bytes: Uint8Array): void {
    if (this.fd === null) throw new SafetensorsError(`${this.path}: write after close`);
    let done = 0;
    while (done < bytes.byteLength)
      done += writeSync(this.fd, bytes, done, bytes.byteLength - done);
  }
}

const ACCEPTS: Readonly<Record<WritableDType, string>> = {
  F32: 'a Float32Array',
  BF16: 'a Float32Array or a Uint16Array of bf16 bits',
  F8_E4M3: 'a Uint8Array of codes',
  U8: 'a Uint8Array of codes',
};

function accepts(dtype: WritableDType, v: TensorValues): boolean {
  if (v instanceof Float32Array) return dtype === 'F32' || dtype === 'BF16';
  if (v instanceof Uint16Array) return dtype === 'BF16';
  return dtype === 'F8_E4M3' || dtype === 'U8';
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
