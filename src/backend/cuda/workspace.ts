import type { CudaDevice } from './device.js';

/**
 * Named scratch buffers for the ops' internal needs (MoE permutation, upcasts). A buffer only
 * grows, and an outgrown one is kept (not freed) because CUDA graphs captured earlier still
 * point at it. Growing while a graph is being captured is an error: warm up first.
 */
export class Workspace {
  private readonly buffers = new Map<string, { ptr: number; bytes: number }>();
  private readonly retired: number[] = [];

  constructor(private readonly dev: CudaDevice) {}

  get(name: string, bytes: number): number {
    const have = this.buffers.get(name);
    if (have && have.bytes >= bytes) return have.ptr;
    if (this.dev.isCapturing) {
      throw new Error(
        `cuda: workspace "${name}" must grow to ${bytes} bytes during graph capture; run the same batch size eagerly first`,
      );
    }
    if (have) this.retired.push(have.ptr);
    const size = Math.ceil(Math.max(bytes, (have?.bytes ?? 0) * 1.5) / 4096) * 4096;
    const ptr = this.dev.malloc(size, `workspace ${name}`);
    this.buffers.set(name, { ptr, bytes: size });
    return ptr;
  }

  get totalBytes(): number {
    let n = 0;
    for (const b of this.buffers.values()) n += b.bytes;
    return n;
  }
}
