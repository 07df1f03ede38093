import type { Backend } from './backend.js';
import { CpuBackend } from './cpu/cpu-backend.js';

export type BackendName = 'cpu' | 'cuda';

export interface CreateBackendOptions {
  /** Threads of the CPU backend's kernels (`--cpu-threads`; default 1). */
  readonly cpuThreads?: number;
}

/**
 * Creates a backend by name. The CUDA backend is imported only when asked for, so nothing
 * else in the project needs CUDA libraries to load.
 */
export async function createBackend(name: string, o: CreateBackendOptions = {}): Promise<Backend> {
  if (name === 'cpu') return new CpuBackend({ threads: o.cpuThreads ?? 1 });
  if (name === 'cuda') {
    const path = './cuda/cuda-backend.js';
    const mod = (await import(path).catch((e: Error) => {
      throw new Error(`the CUDA backend could not be loaded: ${e.message}`);
    })) as { createCudaBackend?: () => Promise<Backend> };
    if (!mod.createCudaBackend)
      throw new Error('the CUDA backend module does not export createCudaBackend');
    return mod.createCudaBackend();
  }
  throw new Error(`unknown backend "${name}" (cpu, cuda)`);
}
