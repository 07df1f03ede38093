import { numel, shapeStr } from '../../tensor/shape.js';
import { SafetensorsError, type SliceSpec } from './safetensors-file.js';

/** A stored tensor as the chunk planner needs it. */
export interface StoredTensor {
  readonly file: string;
  /** How errors name it: `"raw"` or `"raw" (canonical)`. */
  readonly label: string;
  /** Absolute byte offset of element 0 in the file. */
  readonly offset: number;
  readonly shape: readonly number[];
  readonly elemBytes: number;
}

/** One contiguous read from the file, and where its bytes go in the packed slice. */
export interface ReadChunk {
  readonly pos: number;
  readonly len: number;
  /** Whole rows were read; each keeps only its column segment, packed to the front in place. */
  readonly compact?: {
    readonly rows: number;
    readonly rowBytes: number;
    readonly skip: number;
    readonly segBytes: number;
  };
  /** Bytes of slice data this chunk yields (after compaction). */
  readonly outBytes: number;
  /** Byte offset of those bytes within the packed row-major slice. */
  readonly outOffset: number;
}

export interface ReadPlan {
  readonly shape: number[];
  readonly bytes: number;
  readonly chunks: ReadChunk[];
}

function checkRange(t: StoredTensor, what: string, r: readonly [number, number], dim: number) {
  const [s, n] = r;
  if (!Number.isInteger(s) || !Number.isInteger(n) || s < 0 || n < 0 || s + n > dim)
    throw new SafetensorsError(
      `${t.file}: tensor ${t.label} ${shapeStr(t.shape)}: ${what} [${s}, +${n}) is outside 0..${dim}`,
    );
}

/**
 * Splits the read of a [rows, cols] slice (dims 0 and 1; inner dims whole) into chunks of at
 * most `maxBytes` of file data each. Row slices are one contiguous range; column slices read
 * whole rows when a row fits a chunk (and cut them in memory), else each row's segment alone,
 * so a tensor-parallel rank reads only its share of wide rows.
 */
export function planReadChunks(t: StoredTensor, slice: SliceSpec, maxBytes: number): ReadPlan {
  const s = t.shape;
  if ((slice.rows && s.length < 1) || (slice.cols && s.length < 2))
    throw new SafetensorsError(
      `${t.file}: tensor ${t.label} ${shapeStr(s)} has no dim ${slice.cols ? 1 : 0} to slice`,
    );
  const dim0 = s[0] ?? 1;
  const dim1 = s.length >= 2 ? s[1]! : 1;
  const inner = numel(s.slice(2));
  if (slice.rows) checkRange(t, 'rows', slice.rows, dim0);
  if (slice.cols) checkRange(t, 'cols', slice.cols, dim1);
  const [r0, rn] = slice.rows ?? [0, dim0];
  const [c0, cn] = slice.cols ?? [0, dim1];
  const shape = s.length === 0 ? [] : s.length === 1 ? [rn] : [rn, cn, ...s.slice(2)];
  const eb = t.elemBytes;
  const rowBytes = dim1 * inner * eb;
  const segBytes = cn * inner * eb;
  const start = t.offset + r0 * rowBytes;
  const step = Math.max(eb, maxBytes - (maxBytes % eb));
  const chunks: ReadChunk[] = [];
  if (cn === dim1 || rn === 1) {
    // Contiguous (a single row's segment is contiguous too).
    const total = rn * segBytes;
    const pos0 = start + (cn === dim1 ? 0 : c0 * inner * eb);
    for (let o = 0; o < total; o += step) {
      const len = Math.min(step, total - o);
      chunks.push({ pos: pos0 + o, len, outBytes: len, outOffset: o });
    }
  } else if (rowBytes <= maxBytes) {
    const perChunk = Math.floor(maxBytes / rowBytes);
    for (let r = 0; r < rn; r += perChunk) {
      const rows = Math.min(perChunk, rn - r);
      chunks.push({
        pos: start + r * rowBytes,
        len: rows * rowBytes,
        compact: { rows, rowBytes, skip: c0 * inner * eb, segBytes },
        outBytes: rows * segBytes,
        outOffset: r * segBytes,
      });
    }
  } else {
    for (let r = 0; r < rn; r++) {
      const rowPos = start + r * rowBytes + c0 * inner * eb;
      for (let o = 0; o < segBytes; o += step) {
        const len = Math.min(step, segBytes - o);
        chunks.push({ pos: rowPos + o, len, outBytes: len, outOffset: r * segBytes + o });
      }
    }
  }
  return { shape, bytes: rn * segBytes, chunks };
}

/** Packs each row's column segment to the front of `buf` (segments only move left). */
export function compactRows(buf: Uint8Array, c: NonNullable<ReadChunk['compact']>): void {
  for (let i = 0; i < c.rows; i++) {
    const from = i * c.rowBytes + c.skip;
    buf.copyWithin(i * c.segBytes, from, from + c.segBytes);
  }
}
