import { f32ToBf16Into } from '../../tensor/dtype.js';
import type { BatchLayout, ForwardBatch } from '../forward-batch.js';
import type { CpuTensor } from './cpu-tensor.js';
import type { CpuKernels } from './wasm/cpu-kernels.js';

/**
 * `kvCacheDtype: 'bf16'` on the CPU (CpuBackendOptions): caches of dtype bf16 (K, V, MSA
 * index keys) hold bf16 values. Their float32 blocks stay, so every reader (MSA selection, the
 * JS kernels, readF32) works unchanged, but each row a cache write (writeCache, normRopeCache)
 * stores is rounded to bf16 (nearest even), and attention and MSA selection read half-width
 * copies of K, V and the index keys instead: decode at B=32 ctx 256 reads ~30 MB of cache rows a step, most of it from DRAM,
 * and attention was ~20% of a step. The copy widens exactly, so attention computes the same
 * bits as over the rounded float32 block. A tensor counts as a cache from its first cache
 * write or attention (weights, also bf16, never get there); the copy is made at the first
 * attention after a host write (write, fillRandom; the whole block is rounded then) and kept
 * up to date row by row; freeing the cache frees it.
 */
export class Bf16KvCaches {
  private readonly copies = new WeakMap<CpuTensor, Uint16Array>();

  constructor(private readonly kernels: CpuKernels) {}

  /** Whether attention and MSA selection read `t` as a bf16 cache (through copyOf). */
  applies(t: CpuTensor): boolean {
    return (t.base ?? t).dtype === 'bf16' && t.data instanceof Float32Array;
  }

  /** The host wrote `t` (or a view of it): a cache's copy is dropped (made again, rounded). */
  written(t: CpuTensor): void {
    this.drop(t.base ?? t);
  }

  /**
   * The step's cache rows (layout.slots, of `width` values) were written: rounded, and copied
   * if a copy exists (in WASM where it applies: ~3 ns a value in JS).
   */
  rowsWritten(t: CpuTensor, batch: ForwardBatch, layout: BatchLayout, width: number): void {
    const b = t.base ?? t;
    if (!this.applies(b)) return;
    const data = b.data as Float32Array;
    const copy = this.copies.get(b) ?? null;
    if (this.kernels.roundBf16Rows(data, copy, batch, layout, width)) return;
    for (const s of layout.slots) roundRange(data, s * width, (s + 1) * width, copy);
  }

  /** The half-width copy the kernels read; made at first use, rounding the block in place. */
  copyOf(t: CpuTensor): Uint16Array {
    const b = t.base ?? t;
    let copy = this.copies.get(b);
    if (!copy) {
      copy = this.kernels.heap.u16(b.data.length, false);
      roundRange(b.data as Float32Array, 0, b.data.length, copy);
      this.copies.set(b, copy);
    }
    return copy;
  }

  freed(t: CpuTensor): void {
    this.drop(t);
  }

  private drop(t: CpuTensor): void {
    const copy = this.copies.get(t);
    if (copy) this.kernels.heap.free(copy);
    this.copies.delete(t);
  }
}

/** data[from, to) rounded to bf16 in place, the bits also into `copy` when given. */
function roundRange(data: Float32Array, from: number, to: number, copy: Uint16Array | null): void {
  const h = copy ? copy.subarray(from, to) : new Uint16Array(to - from);
  f32ToBf16Into(data.subarray(from, to), h);
  const bits = new Uint32Array(data.buffer, data.byteOffset + 4 * from, to - from);
  for (let i = 0; i < h.length; i++) bits[i] = h[i]! << 16;
}
