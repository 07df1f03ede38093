import type { RopeTable } from '../ops/rope.js';
import { HeapScratch } from './step-tables.js';
import type { WasmHeap } from './wasm-heap.js';

/**
 * A step's RoPE table (ops/rope.ts: float64 cos, then sin, [T, half] each) copied into the
 * heap for the WASM kernels. The copy is kept for the last table seen: a step's table is one
 * object shared by every layer, so it is copied once a step.
 */
export class HeapRopeTable {
  private readonly block: HeapScratch;
  private from: RopeTable | null = null;
  private at = 0;

  constructor(heap: WasmHeap) {
    this.block = new HeapScratch(heap);
  }

  /** Byte offsets of cos and sin in the heap. */
  of(table: RopeTable): readonly [number, number] {
    const n = table.cos.length;
    const f = this.block.f32(4 * n); // 2n float64
    if (table !== this.from || f.byteOffset !== this.at) {
      const d = new Float64Array(f.buffer, f.byteOffset, 2 * n);
      d.set(table.cos);
      d.set(table.sin, n);
      this.from = table;
      this.at = f.byteOffset;
    }
    return [this.at, this.at + 8 * n];
  }
}
