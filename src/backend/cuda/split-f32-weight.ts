import type { SplitF32 } from '../../tensor/split-f32.js';
import { numel, type Shape } from '../../tensor/shape.js';
import { CudaTensor, type PoolBlock } from './cuda-tensor.js';
import { launchKernel } from './kernel-launch.js';
import { SPLIT_BF16X3 } from './kernel-table.js';
import { strideGrid, type OpContext } from './op-context.js';

/**
 * An f32 matrix weight [N, K] that also holds its bf16x3 split (split-bf16x3.ts): bf16 parts
 * W1 + W2 + W3 = W stacked as one bf16 matrix [3N, K] (W1's rows, then W2's, then W3's), so
 * that matmul can multiply bf16 activations with it on the bf16 tensor cores
 * (matmul-bf16x3.ts). Every other op reads it as the f32 tensor it is. The backend's writes
 * into it (write, fillRandom, weight uploads; views included) re-split what they wrote
 * (`resplit`), so the parts always hold the split of the current values. Created by
 * CudaBackend.allocF32Weight (the loader's MoE routers): 1.5x the f32 bytes again.
 */
export class SplitF32Weight extends CudaTensor implements SplitF32 {
  declare readonly dtype: 'f32';

  constructor(
    shape: Shape,
    ptr: number,
    block: PoolBlock | null,
    /** Device address of this tensor's element 0 in W1; W2 and W3 lie `partStride` on. */
    readonly partsPtr: number,
    /** Elements from one part to the next: the whole weight's element count. */
    readonly partStride: number,
    /** The parts' allocation, owned by the whole weight (null for views). */
    readonly partsOwner: CudaTensor | null,
  ) {
    super(shape, 'f32', ptr, block);
  }

  get partElements(): number {
    return this.partsOwner ? 3 * this.partStride : 0;
  }

  /** The parts as one bf16 matrix [3N, K] when this is a whole 2-D weight, else null (a row range). */
  get stacked(): CudaTensor | null {
    const [N, K] = this.shape;
    if (this.shape.length !== 2 || this.partStride !== this.numel) return null;
    return new CudaTensor([3 * N!, K!], 'bf16', this.partsPtr, null);
  }

  /** The same elements under another shape (Backend.view). */
  reshaped(shape: Shape): SplitF32Weight {
    return new SplitF32Weight(shape, this.ptr, null, this.partsPtr, this.partStride, null);
  }

  /** Rows [start, start + count) of the outermost dimension (Backend.rows). */
  rowRange(start: number, count: number): SplitF32Weight {
    const off = start * numel(this.shape.slice(1));
    return new SplitF32Weight(
      [count, ...this.shape.slice(1)],
      this.ptr + off * 4,
      null,
      this.partsPtr + off * 2,
      this.partStride,
      null,
    );
  }
}

/** A split weight of `shape`, its f32 values and parts uninitialised. */
export function allocSplitF32Weight(
  allocRaw: (shape: Shape, dtype: 'f32' | 'bf16') => CudaTensor,
  shape: Shape,
): SplitF32Weight {
  if (shape.length !== 2) throw new Error(`allocF32Weight: [N, K], not [${shape.join(', ')}]`);
  const values = allocRaw(shape, 'f32');
  const parts = allocRaw([3 * shape[0]!, shape[1]!], 'bf16');
  return new SplitF32Weight(shape, values.ptr, values.block, parts.ptr, values.numel, parts);
}

/** Re-splits elements [offset, offset + n) of `t` after they were written (all by default). */
export function resplit(ctx: OpContext, t: SplitF32Weight, offset = 0, n = t.numel): void {
  if (n <= 0) return;
  const shape = { grid: strideGrid(ctx, n), block: [256, 1, 1] as const };
  const args = { parts: t.partsPtr + offset * 2, stride: t.partStride, w: t.ptr + offset * 4, n };
  launchKernel(ctx, SPLIT_BF16X3, 'split_bf16x3', shape, args);
}
