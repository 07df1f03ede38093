/**
 * Per-step metadata on the device. `layoutBatch` runs on the host; the arrays are written into
 * one pinned staging buffer and copied to one device buffer with a single stream-ordered copy.
 * Inside a CUDA-graph capture that copy becomes a graph node that reads the pinned buffer when
 * the graph is replayed, so a replay only rewrites the staging buffer (`stage`) and launches.
 *
 * Layout (int32, offsets depend only on T, R, the number of sequences and the page stride, which
 * are fixed for a captured batch size): tokenIds[T] positions[T] seqOfToken[T] slots[T]
 * logitRows[R] pageTable[numSeqs * pageStride]. A batch that a graph replays carries the
 * graph's `pageTableStride`.
 */
import type { BatchMeta } from '../backend.js';
import { layoutBatch, type BatchLayout, type ForwardBatch } from '../forward-batch.js';
import type { CudaDevice, PinnedBuffer } from './device.js';

export interface CudaBatchMeta extends BatchMeta {
  readonly layout: BatchLayout;
  readonly numSeqs: number;
  /** Page-table row length (entries per sequence). */
  readonly pageStride: number;
  readonly tokenIds: number;
  readonly positions: number;
  readonly seqOfToken: number;
  readonly slots: number;
  readonly logitRows: number;
  readonly pageTable: number;
}

export class BatchMetaStore {
  private readonly pinned: PinnedBuffer;
  private readonly dev: number;
  constructor(
    private readonly device: CudaDevice,
    readonly capacityInts: number,
  ) {
    this.pinned = device.pinned(capacityInts * 4);
    this.dev = device.malloc(capacityInts * 4, 'batch metadata');
  }

  /** Lays out `batch`, stages it and enqueues the copy to the device. */
  prepare(batch: ForwardBatch): CudaBatchMeta {
    // The previous step's copy may still read the staging buffer (never while capturing).
    if (!this.device.isCapturing) this.device.sync();
    const meta = this.stage(batch);
    this.device.uploadAsync(this.dev, this.pinned.address, this.usedInts(meta) * 4);
    return meta;
  }

  /** Host side only: writes the batch's arrays into the staging buffer. */
  stage(batch: ForwardBatch): CudaBatchMeta {
    const layout = layoutBatch(batch);
    const T = layout.numTokens;
    const R = layout.logitRows.length;
    const numSeqs = batch.seqs.length;
    let stride = batch.pageTableStride ?? 1;
    if (batch.pageTableStride === undefined)
      for (const s of batch.seqs) stride = Math.max(stride, s.pageTable.length);
    const offsets = [0, T, 2 * T, 3 * T, 4 * T, 4 * T + R];
    const total = 4 * T + R + numSeqs * stride;
    if (total > this.capacityInts) {
      throw new Error(
        `cuda: batch metadata needs ${total} ints (T=${T}, ${numSeqs} sequences x ${stride} pages), capacity ${this.capacityInts}; raise maxMetaInts`,
      );
    }
    const v = this.pinned.view;
    const put = (off: number, a: ArrayLike<number>): void => {
      for (let i = 0; i < a.length; i++) v.setInt32((off + i) * 4, a[i]!, true);
    };
    put(offsets[0]!, batch.tokenIds);
    put(offsets[1]!, layout.positions);
    put(offsets[2]!, layout.seqOfToken);
    put(offsets[3]!, layout.slots);
    put(offsets[4]!, layout.logitRows);
    batch.seqs.forEach((s, i) => {
      if (s.pageTable.length > stride)
        throw new Error(
          `cuda: sequence ${i} has ${s.pageTable.length} pages, the captured page stride is ${stride}`,
        );
      const base = offsets[5]! + i * stride;
      put(base, s.pageTable);
      for (let p = s.pageTable.length; p < stride; p++) v.setInt32((base + p) * 4, 0, true);
    });
    const at = (i: number): number => this.dev + offsets[i]! * 4;
    return {
      batch,
      layout,
      numTokens: T,
      numLogitRows: R,
      numSeqs,
      pageStride: stride,
      tokenIds: at(0),
      positions: at(1),
      seqOfToken: at(2),
      slots: at(3),
      logitRows: at(4),
      pageTable: at(5),
    };
  }

  private usedInts(m: CudaBatchMeta): number {
    return 4 * m.numTokens + m.numLogitRows + m.numSeqs * m.pageStride;
  }
}
