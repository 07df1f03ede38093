import type { DType } from '../../tensor/dtype.js';
import { DTYPE_BYTES } from '../../tensor/dtype.js';
import { numel, shapeStr, type Shape } from '../../tensor/shape.js';
import type { Tensor, TensorStorage } from '../../tensor/tensor.js';

/** A tensor in device memory: `ptr` is the CUdeviceptr of element 0 (views share storage). */
export class CudaTensor implements Tensor {
  readonly device = 'cuda' as const;
  constructor(
    readonly shape: Shape,
    readonly dtype: DType,
    readonly ptr: number,
    /** The pooled allocation this tensor owns, or null for views. */
    readonly block: PoolBlock | null,
  ) {}

  get storage(): TensorStorage {
    return this;
  }

  get numel(): number {
    return numel(this.shape);
  }

  get bytes(): number {
    return numel(this.shape) * DTYPE_BYTES[this.dtype];
  }
}

export interface PoolBlock {
  readonly ptr: number;
  readonly bytes: number;
  inUse: boolean;
}

/** Casts to CudaTensor, checking dtype (one of `dtypes`) and, if given, the exact shape. */
export function cuda(
  t: Tensor,
  what: string,
  dtypes?: readonly DType[],
  shape?: Shape,
): CudaTensor {
  if (!(t instanceof CudaTensor))
    throw new Error(`${what}: not a CUDA tensor (device ${t.device})`);
  if (dtypes && !dtypes.includes(t.dtype))
    throw new Error(`${what}: dtype ${t.dtype}, expected ${dtypes.join(' or ')}`);
  if (shape && (shape.length !== t.shape.length || shape.some((d, i) => d !== t.shape[i])))
    throw new Error(`${what}: shape ${shapeStr(t.shape)}, expected ${shapeStr(shape)}`);
  return t;
}

/** Type letter used in kernel names: b = bf16, f = f32. */
export function letter(t: Tensor, what: string): 'b' | 'f' {
  if (t.dtype === 'bf16') return 'b';
  if (t.dtype === 'f32') return 'f';
  throw new Error(`${what}: dtype ${t.dtype} not supported by the CUDA kernels (bf16, f32)`);
}

/**
 * Caching allocator: freed blocks go back to a free list keyed by rounded size and are
 * never returned to the driver (CUDA graphs keep their addresses), so a step's scratch
 * tensors cost no cuMemAlloc after the first step of that shape.
 */
export class MemoryPool {
  private readonly free = new Map<number, PoolBlock[]>();
  reservedBytes = 0;
  inUseBytes = 0;

  constructor(private readonly malloc: (bytes: number) => number) {}

  static roundSize(bytes: number): number {
    if (bytes <= 4096) return Math.max(256, Math.ceil(bytes / 256) * 256);
    // Four size classes per power of two: at most 25% waste, good reuse across steps.
    const step = 2 ** Math.max(12, Math.floor(Math.log2(bytes)) - 2);
    return Math.ceil(bytes / step) * step;
  }

  take(bytes: number): PoolBlock {
    const size = MemoryPool.roundSize(bytes);
    const list = this.free.get(size);
    let block = list?.pop();
    if (!block) {
      block = { ptr: this.malloc(size), bytes: size, inUse: false };
      this.reservedBytes += size;
    }
    block.inUse = true;
    this.inUseBytes += size;
    return block;
  }

  give(block: PoolBlock): void {
    if (!block.inUse) return;
    block.inUse = false;
    this.inUseBytes -= block.bytes;
    let list = this.free.get(block.bytes);
    if (!list) this.free.set(block.bytes, (list = []));
    list.push(block);
  }
}
