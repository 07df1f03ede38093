import { exactBf16, type CpuTensor } from './cpu-tensor.js';
import { packable, PackedPanels, packPanels } from './packed-panels.js';
import type { WasmHeap } from './wasm/wasm-heap.js';

/**
 * The copies of weights that the weight-reading kernels (matmul, moe) multiply by: a weight
 * [.., N, K] whose N is a multiple of 8 and K of 4 is packed in panels of 8 columns for the
 * register-blocked kernel (PackedPanels), as bf16 bits when every value is exactly bf16 (a
 * bf16 checkpoint: half the bytes per decode step, widened in the kernel with the same result
 * bits) and as float32 otherwise; other shapes get a row-major bf16 copy when exactly bf16,
 * else the kernels read the tensor's float32 data. A tensor gets its copy at its first use
 * when it was filled from the host (`write`, `fillRandom`: how weights are loaded) and has
 * rank ≥ 2. The float32 block stays for every other reader. A later host write drops the
 * copy; freeing the tensor frees it.
 */
export class KernelWeights {
  private readonly filled = new WeakSet<CpuTensor>();
  private readonly copies = new WeakMap<CpuTensor, Uint16Array | PackedPanels | null>();

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
  of(t: CpuTensor, data: Float32Array): Float32Array | Uint16Array | PackedPanels {
    if (t.base && t.shape.length === 2) return this.rowsOf(t, t.base, data);
    if (!this.filled.has(t) || t.shape.length < 2) return data;
    let copy = this.copies.get(t);
    if (copy === undefined) {
      copy = this.copy(t, data);
      this.copies.set(t, copy);
    }
    return copy ?? data;
  }

  /**
   * A view of whole rows of a weight block (the MSA indexer's q and k projections share one,
   * weights.ts loadQk): the block's packed panels that hold those rows, a subarray, when the
   * rows start and end on panel boundaries; else the view's float32 data, which the row-major
   * f32 kernel read at 4× the bytes and ~1/4 the speed of packed bf16 at M = 1 (~5% of a
   * decode B=1 step).
   */
  private rowsOf(
    t: CpuTensor,
    b: CpuTensor,
    data: Float32Array,
  ): Float32Array | Uint16Array | PackedPanels {
    const [n, K] = t.shape as [number, number];
    if (b.shape.length !== 2 || b.shape[1] !== K || !(b.data instanceof Float32Array)) return data;
    const whole = this.of(b, b.data);
    const r0 = (data.byteOffset - b.data.byteOffset) / (4 * K);
    if (!(whole instanceof PackedPanels) || !Number.isInteger(r0) || r0 % 8 !== 0 || n % 8 !== 0)
      return data;
    return whole.subarray(r0 * K, (r0 + n) * K);
  }

  private copy(t: CpuTensor, data: Float32Array): Uint16Array | PackedPanels | null {
    const [N, K] = t.shape.slice(-2) as [number, number];
    const bits = t.dtype === 'bf16' ? exactBf16(data) : null;
    if (packable(N, K)) {
      const dst = bits ? this.heap.u16(bits.length, false) : this.heap.f32(data.length, false);
      return new PackedPanels(packPanels(bits ?? data, dst, N, K));
    }
    if (!bits) return null;
    const copy = this.heap.u16(bits.length, false);
    copy.set(bits);
    return copy;
  }

  private drop(t: CpuTensor): void {
    const copy = this.copies.get(t);
    if (copy) this.heap.free(copy instanceof PackedPanels ? copy.data : copy);
    this.copies.delete(t);
  }
}
