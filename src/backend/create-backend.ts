import type { Backend } from './backend.js';
import { CpuBackend } from './cpu/cpu-backend.js';

export type BackendName = 'cpu' | 'cuda';

export interface CreateBackendOptions {
  /** Threads of the CPU backend's kernels (`--cpu-threads`; default 1). */
  readonly cpuThreads?: number;
  /** What the CPU backend's KV caches hold (`--kv-cache-dtype bf16`: bf16; else float32). */
  readonly cpuKvCacheDtype?: 'f32' | 'bf16';
  /** The CUDA device ordinal to open (default 0). */
  readonly deviceOrdinal?: number;
  /** CUDA: told when a blocking kernel compile starts and ends (a rank's hang watchdog). */
  readonly onCompile?: (compiling: boolean) => void;
}

interface CudaModule {
  createCudaBackend?: (o: {
    deviceOrdinal?: number;
    onCompile?: (compiling: boolean) => void;
  }) => Promise<Backend>;
  cudaDeviceCount?: () => number;
}

async function cudaModule(): Promise<CudaModule> {
  const path = './cuda/cuda-backend.js';
  return (await import(path).catch((e: Error) => {
    throw new Error(`the CUDA backend could not be loaded: ${e.message}`);
  })) as CudaModule;
}

/** How many GPUs this process sees (for the device map of a --tp group). */
export async function cudaDeviceCount(): Promise<number> {
  const mod = await cudaModule();
  if (!mod.cudaDeviceCount)
    throw new Error('the CUDA backend module does not export cudaDeviceCount');
  return mod.cudaDeviceCount();
}

/**
 * Creates a backend by name. The CUDA backend is imported only when asked for, so nothing
 * else in the project needs CUDA libraries to load.
 */
export async function createBackend(name: string, o: CreateBackendOptions = {}): Promise<Backend> {
  if (name === 'cpu')
    return new CpuBackend({
      threads: o.cpuThreads ?? 1,
      ...(o.cpuKvCacheDtype && { kvCacheDtype: o.cpuKvCacheDtype }),
    });
  if (name === 'cuda') {
    const mod = await cudaModule();
    if (!mod.createCudaBackend)
      throw new Error('the CUDA backend module does not export createCudaBackend');
    return mod.createCudaBackend({
      ...(o.deviceOrdinal !== undefined && { deviceOrdinal: o.deviceOrdinal }),
      ...(o.onCompile && { onCompile: o.onCompile }),
    });
  }
  throw new Error(`unknown backend "${name}" (cpu, cuda)`);
}
