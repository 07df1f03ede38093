/**
 * Device memory for the CUDA backend's tensors: small allocations from the caching pool (no
 * cuMemAlloc/cuMemFree per step), large ones (weights, KV cache, huge prefill scratch) exact.
 */
import { DTYPE_BYTES, type DType } from '../../tensor/dtype.js';
import { numel, shapeStr, type Shape } from '../../tensor/shape.js';
import { CudaTensor, MemoryPool, type PoolBlock } from './cuda-tensor.js';
import type { CudaDevice } from './device.js';

/**
 * Allocations at least this large bypass the pool: cuMemAlloc each time and, when freed, a
 * device sync and cuMemFree. 1 GiB (was 256 MiB) so that a chunk of up to ~16k prefill tokens
 * keeps its scratch in the pool across forwards (at 8,192 tokens each dense layer's gate|up is
 * 402 MB: three allocations and three synchronising frees per forward otherwise).
 */
const EXACT_ALLOC_BYTES = 2 ** 30;

export class DeviceAllocator {
  private readonly pool: MemoryPool;
  private readonly exact = new Set<PoolBlock>();

  constructor(private readonly dev: CudaDevice) {
    this.pool = new MemoryPool((bytes) => dev.malloc(bytes, 'pool block'));
  }

  /** Bytes the pool holds from the device (in use or cached). */
  get pooledBytes(): number {
    return this.pool.reservedBytes;
  }

  /** An uninitialised tensor of `dtype` (already the stored dtype). */
  alloc(shape: Shape, dtype: DType): CudaTensor {
    const bytes = Math.max(1, numel(shape) * DTYPE_BYTES[dtype]);
    let block: PoolBlock;
    if (bytes >= EXACT_ALLOC_BYTES) {
      block = {
        ptr: this.dev.malloc(bytes, `tensor ${shapeStr(shape)} ${dtype}`),
        bytes,
        inUse: true,
      };
      this.exact.add(block);
    } else {
      block = this.pool.take(bytes);
    }
    return new CudaTensor(shape, dtype, block.ptr, block);
  }

  /**
   * Returns a tensor's block: to the pool, or (exact blocks) to the device after a sync, which
   * a graph capture cannot contain. Views and already freed tensors are no-ops.
   */
  free(t: CudaTensor): void {
    const block = t.block;
    if (!block || !block.inUse) return;
    if (!this.exact.has(block)) {
      this.pool.give(block);
      return;
    }
    if (this.dev.isCapturing) throw new Error('cuda: freeing a large tensor during graph capture');
    this.dev.sync();
    block.inUse = false;
    this.exact.delete(block);
    this.dev.free(block.ptr, block.bytes);
  }
}
