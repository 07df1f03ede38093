import { exactBf16, type CpuTensor } from './cpu-tensor.js';
import type { WasmHeap } from './wasm/wasm-heap.js';

/**
 * Half-width (bf16) copies of weights for the kernels that read weights (matmul, moe): a
 * bf16 checkpoint's values are exactly bf16, so the kernel can read half the bytes and widen
 * them, with the same result bits as from the float32 copy (decode is bound by weight
 * bandwidth). A tensor gets a copy at its first use when it was filled from the host (`write`,
 * `fillRandom`: how weights are loaded), has dtype bf16 and rank ≥ 2, and every value is
 * exactly bf16; otherwise the kernels read its float32 data. The float32 block stays for every
 * other reader. A later host write drops the copy; freeing the tensor frees it.
 */
export class Bf16Weights {
  private readonly filled = new WeakSet<CpuTensor>();
  private readonly copies = new WeakMap<CpuTensor, Uint16Array | null>();

  constructor(private readonly heap: WasmHeap) {}

  /** `t` (or a view of it) was written from the host. */
  written(t: CpuTensor): void {
    const b = t.base ?? t;
    this.filled.add(b);
    this.drop(b);
  }

  freed(t: CpuTensor): void {
    this.drop(t);
    this.filled.delete(t);
  }

  /** What a kernel should read for weight `t` (its float32 data is `data`). */
  of(t: CpuTensor, data: Float32Array): Float32Array | Uint16Array {
    if (!this.filled.has(t) || t.dtype !== 'bf16' || t.shape.length < 2) return data;
    let copy = this.copies.get(t);
    if (copy === undefined) {
      const bits = exactBf16(data);
      copy = bits ? this.heap.u16(bits.length, false) : null;
      if (copy && bits) copy.set(bits);
      this.copies.set(t, copy);
    }
    return copy ?? data;
  }

  private drop(t: CpuTensor): void {
    const copy = this.copies.get(t);
    if (copy) this.heap.free(copy);
    this.copies.delete(t);
  }
}
