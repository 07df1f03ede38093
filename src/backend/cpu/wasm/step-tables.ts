import type { BatchLayout, ForwardBatch } from '../../forward-batch.js';
import type { WasmHeap } from './wasm-heap.js';

/**
 * A step's token tables in the heap, for the WASM attention kernels: `meta` i32 [T, 2] =
 * (position, byte offset of the sequence's page table), then every sequence's page table,
 * then i32 [T] the tokens' cache slots.
 * Filled once per step: kept for the last layout seen and refilled when another one comes
 * (the same layout serves every layer of the step).
 */
export class StepTables {
  private layout: BatchLayout | null = null;
  private buf: Int32Array | null = null;
  /** Byte offset of meta [T, 2]. */
  metaPtr = 0;
  /** Byte offset of slots [T]. */
  slotsPtr = 0;
  /** Largest position of the step's tokens. */
  maxPos = 0;

  constructor(private readonly heap: WasmHeap) {}

  fill(batch: ForwardBatch, layout: BatchLayout): void {
    if (layout === this.layout) return;
    const T = layout.numTokens;
    const n = batch.seqs.reduce((acc, s) => acc + s.pageTable.length, 3 * T);
    if (this.buf === null || this.buf.length < n) {
      if (this.buf) this.heap.free(this.buf);
      this.buf = this.heap.i32(Math.ceil(n * 1.5) + 64);
    }
    const buf = this.buf;
    const ptOffset: number[] = [];
    let at = 2 * T;
    for (const s of batch.seqs) {
      ptOffset.push(buf.byteOffset + at * 4);
      buf.set(s.pageTable, at);
      at += s.pageTable.length;
    }
    let maxPos = 0;
    for (let t = 0; t < T; t++) {
      const pos = layout.positions[t]!;
      buf[2 * t] = pos;
      buf[2 * t + 1] = ptOffset[layout.seqOfToken[t]!]!;
      if (pos > maxPos) maxPos = pos;
    }
    buf.set(layout.slots, at);
    this.slotsPtr = buf.byteOffset + at * 4;
    this.metaPtr = buf.byteOffset;
    this.maxPos = maxPos;
    this.layout = layout;
  }
}

/** A scratch block of the heap that grows on demand and is kept for reuse. */
export class HeapScratch {
  private f: Float32Array | null = null;

  constructor(private readonly heap: WasmHeap) {}

  /** At least n floats (contents undefined). */
  f32(n: number): Float32Array {
    if (this.f === null || this.f.length < n) {
      if (this.f) this.heap.free(this.f);
      this.f = this.heap.f32(Math.max(1024, Math.ceil(n * 1.5)));
    }
    return this.f;
  }
}
