import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import type { HostTensor } from '../../tensor/tensor.js';
import { numel, shapeStr } from '../../tensor/shape.js';
import {
  DECODABLE,
  decodeToF32,
  isStDType,
  ST_DTYPE_BYTES,
  type StDType,
} from './safetensors-dtype.js';

export class SafetensorsError extends Error {
  override name = 'SafetensorsError';
}

/** One tensor of a safetensors header, with its data located in the file. */
export interface TensorEntry {
  readonly name: string;
  readonly dtype: StDType;
  readonly shape: readonly number[];
  /** Absolute byte offset of the first element in the file. */
  readonly offset: number;
  readonly byteLength: number;
}

/** A `[start, count)` range of dim 0 (`rows`) and/or dim 1 (`cols`). */
export interface SliceSpec {
  readonly rows?: readonly [number, number] | undefined;
  readonly cols?: readonly [number, number] | undefined;
}

/** A resolved slice, viewing the tensor as [dim0, dim1, inner]. */
interface Region {
  r0: number;
  rn: number;
  c0: number;
  cn: number;
  dim1: number;
  inner: number;
  shape: number[];
}

// safetensors itself refuses headers over 100 MB; a larger length means a corrupt file.
const MAX_HEADER_BYTES = 100_000_000;
// Column slices of rows up to this size are read as one block and cut in memory.
const BLOCK_READ_LIMIT = 4 << 20;
// readSync takes at most 2 GiB per call.
const READ_CHUNK = 1 << 30;

/** A safetensors file opened for random access: the header is parsed, data is read on demand. */
export class SafetensorsFile {
  private constructor(
    readonly path: string,
    private fd: number | null,
    readonly metadata: Readonly<Record<string, string>>,
    private readonly entries: ReadonlyMap<string, TensorEntry>,
  ) {}

  static open(path: string): SafetensorsFile {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (e) {
      throw new SafetensorsError(`${path}: cannot open (${(e as Error).message})`);
    }
    try {
      const { metadata, entries } = parseHeader(path, fd);
      return new SafetensorsFile(path, fd, metadata, entries);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  entry(name: string): TensorEntry {
    const e = this.entries.get(name);
    if (!e) throw new SafetensorsError(`${this.path}: tensor "${name}" not found`);
    return e;
  }

  /** Raw little-endian bytes of a slice (row-major), and the slice's shape. */
  readBytes(name: string, slice: SliceSpec = {}): { shape: number[]; bytes: Uint8Array } {
    const e = this.entry(name);
    const r = resolveRegion(this.path, e, slice);
    const eb = ST_DTYPE_BYTES[e.dtype];
    const rowBytes = r.dim1 * r.inner * eb;
    const segBytes = r.cn * r.inner * eb;
    const bytes = new Uint8Array(r.rn * segBytes);
    const start = e.offset + r.r0 * rowBytes;
    if (r.cn === r.dim1) {
      this.readAt(bytes, start);
    } else if (r.rn * rowBytes <= BLOCK_READ_LIMIT) {
      const block = new Uint8Array(r.rn * rowBytes);
      this.readAt(block, start);
      const skip = r.c0 * r.inner * eb;
      for (let i = 0; i < r.rn; i++) {
        const from = i * rowBytes + skip;
        bytes.set(block.subarray(from, from + segBytes), i * segBytes);
      }
    } else {
      // Wide rows: read only each row's segment so a TP rank touches 1/tp of the bytes.
      for (let i = 0; i < r.rn; i++) {
        this.readAt(
          bytes.subarray(i * segBytes, (i + 1) * segBytes),
          start + i * rowBytes + r.c0 * r.inner * eb,
        );
      }
    }
    return { shape: r.shape, bytes };
  }

  /** A slice converted to float32 (no scales applied: FP8 codes decode to their e4m3 value). */
  read(name: string, slice: SliceSpec = {}): HostTensor {
    const e = this.entry(name);
    if (!DECODABLE.has(e.dtype)) {
      throw new SafetensorsError(
        `${this.path}: tensor "${name}" has dtype ${e.dtype}, which moeserve cannot read`,
      );
    }
    const { shape, bytes } = this.readBytes(name, slice);
    return { shape, data: decodeToF32(e.dtype, bytes) };
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private readAt(target: Uint8Array, position: number): void {
    if (this.fd === null) throw new SafetensorsError(`${this.path}: read after close`);
    let done = 0;
    while (done < target.byteLength) {
      const len = Math.min(READ_CHUNK, target.byteLength - done);
      const got = readSync(this.fd, target, done, len, position + done);
      if (got === 0) {
        throw new SafetensorsError(
          `${this.path}: unexpected end of file at byte ${position + done}`,
        );
      }
      done += got;
    }
  }
}

function parseHeader(
  path: string,
  fd: number,
): { metadata: Record<string, string>; entries: Map<string, TensorEntry> } {
  const size = fstatSync(fd).size;
  const fail = (msg: string): never => {
    throw new SafetensorsError(`${path}: ${msg}`);
  };
  if (size < 8) fail(`file is ${size} bytes, too short for a safetensors header (truncated?)`);
  const lenBuf = Buffer.alloc(8);
  readSync(fd, lenBuf, 0, 8, 0);
  const headerLen = Number(lenBuf.readBigUInt64LE(0));
  if (headerLen > MAX_HEADER_BYTES)
    fail(`header length ${headerLen} is implausible (corrupt file?)`);
  if (8 + headerLen > size)
    fail(`header length ${headerLen} runs past the end of the file (${size} bytes): truncated`);
  const headerBuf = Buffer.alloc(headerLen);
  readSync(fd, headerBuf, 0, headerLen, 8);
  let header: unknown;
  try {
    header = JSON.parse(headerBuf.toString('utf8'));
  } catch (e) {
    return fail(`header is not valid JSON (${(e as Error).message})`);
  }
  if (!header || typeof header !== 'object' || Array.isArray(header))
    fail('header is not a JSON object');
  const dataStart = 8 + headerLen;
  const metadata: Record<string, string> = {};
  const entries = new Map<string, TensorEntry>();
  for (const [name, raw] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') {
      Object.assign(metadata, raw ?? {});
      continue;
    }
    entries.set(name, parseEntry(path, name, raw, dataStart, size));
  }
  checkNoOverlap(path, entries);
  return { metadata, entries };
}

/**
 * Two tensors sharing bytes load "fine" and compute garbage; the format forbids it (the data
 * section is packed). Sorted by start, each tensor must end before the next begins.
 */
function checkNoOverlap(path: string, entries: ReadonlyMap<string, TensorEntry>): void {
  const byStart = [...entries.values()]
    .filter((e) => e.byteLength > 0)
    .sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < byStart.length; i++) {
    const prev = byStart[i - 1]!;
    const cur = byStart[i]!;
    if (cur.offset < prev.offset + prev.byteLength)
      throw new SafetensorsError(
        `${path}: tensor "${cur.name}": data [${cur.offset}, ${cur.offset + cur.byteLength}) ` +
          `overlaps tensor "${prev.name}" [${prev.offset}, ${prev.offset + prev.byteLength})`,
      );
  }
}

function parseEntry(
  path: string,
  name: string,
  raw: unknown,
  dataStart: number,
  size: number,
): TensorEntry {
  const fail = (msg: string): never => {
    throw new SafetensorsError(`${path}: tensor "${name}": ${msg}`);
  };
  const v = (raw ?? {}) as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
  if (!isStDType(v.dtype)) fail(`unknown dtype ${JSON.stringify(v.dtype)}`);
  const dtype = v.dtype as StDType;
  const shape = v.shape;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    fail(`shape ${JSON.stringify(shape)} is not a list of non-negative integers`);
  }
  const offs = v.data_offsets;
  if (
    !Array.isArray(offs) ||
    offs.length !== 2 ||
    !offs.every((o) => Number.isInteger(o) && o >= 0) ||
    offs[0] > offs[1]
  ) {
    fail(`data_offsets ${JSON.stringify(offs)} are not [begin, end]`);
  }
  const [begin, end] = offs as [number, number];
  const want = numel(shape as number[]) * ST_DTYPE_BYTES[dtype];
  if (end - begin !== want) {
    fail(
      `data_offsets [${begin}, ${end}) hold ${end - begin} bytes, but ${dtype} ${shapeStr(shape as number[])} needs ${want}`,
    );
  }
  if (dataStart + end > size) {
    fail(
      `data [${dataStart + begin}, ${dataStart + end}) lies beyond the end of the file (${size} bytes): truncated`,
    );
  }
  return {
    name,
    dtype,
    shape: Object.freeze([...(shape as number[])]),
    offset: dataStart + begin,
    byteLength: want,
  };
}

function checkRange(
  path: string,
  e: TensorEntry,
  what: string,
  range: readonly [number, number],
  dim: number,
): void {
  const [s, n] = range;
  if (!Number.isInteger(s) || !Number.isInteger(n) || s < 0 || n < 0 || s + n > dim) {
    throw new SafetensorsError(
      `${path}: tensor "${e.name}" ${shapeStr(e.shape)}: ${what} [${s}, +${n}) is outside 0..${dim}`,
    );
  }
}

function resolveRegion(path: string, e: TensorEntry, slice: SliceSpec): Region {
  const s = e.shape;
  if ((slice.rows && s.length < 1) || (slice.cols && s.length < 2)) {
    throw new SafetensorsError(
      `${path}: tensor "${e.name}" ${shapeStr(s)} has no dim ${slice.cols ? 1 : 0} to slice`,
    );
  }
  const dim0 = s[0] ?? 1;
  const dim1 = s.length >= 2 ? s[1]! : 1;
  const inner = numel(s.slice(2));
  const [r0, rn] = slice.rows ?? [0, dim0];
  const [c0, cn] = slice.cols ?? [0, dim1];
  if (slice.rows) checkRange(path, e, 'rows', slice.rows, dim0);
  if (slice.cols) checkRange(path, e, 'cols', slice.cols, dim1);
  const shape = s.length === 0 ? [] : s.length === 1 ? [rn] : [rn, cn, ...s.slice(2)];
  return { r0, rn, c0, cn, dim1, inner, shape };
}
