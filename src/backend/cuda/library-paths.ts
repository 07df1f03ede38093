/**
 * Finds the CUDA libraries (driver, NVRTC, cuBLAS, cuBLASLt) and the toolkit's include folder.
 * Nothing is hard-coded as the only choice: each library is looked for, in order, in
 *   1. its own environment override (MOESERVE_LIBCUDA, MOESERVE_LIBNVRTC, MOESERVE_LIBCUBLAS,
 *      MOESERVE_LIBCUBLASLT: a full path to the file),
 *   2. MOESERVE_CUDA_LIB_DIR (a folder, or several joined with ':'),
 *   3. the usual driver and toolkit folders (CUDA_HOME/CUDA_PATH, /usr/local/nvidia/lib64,
 *      /usr/local/cuda/targets/x86_64-linux/lib, /usr/local/cuda/lib64, system folders),
 *   4. pip wheels: site-packages/nvidia/{cu13,cuda_nvrtc,cublas,...}/lib of any python found,
 *   5. the bare soname, left to the dynamic loader (LD_LIBRARY_PATH, ld.so.cache).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { readEnv } from '../../config/env.js';

export type CudaLibrary = 'cuda' | 'nvrtc' | 'cublas' | 'cublasLt';

const SONAMES: Readonly<Record<CudaLibrary, readonly string[]>> = {
  cuda: ['libcuda.so.1', 'libcuda.so'],
  nvrtc: ['libnvrtc.so.13', 'libnvrtc.so.12', 'libnvrtc.so'],
  cublas: ['libcublas.so.13', 'libcublas.so.12', 'libcublas.so'],
  cublasLt: ['libcublasLt.so.13', 'libcublasLt.so.12', 'libcublasLt.so'],
};

function toolkitRoots(): string[] {
  return [...readEnv().cudaRoots, '/usr/local/cuda', '/usr/local/cuda-13.0'];
}

/** site-packages/nvidia/<pkg>/lib folders of the pythons installed in the usual places. */
function wheelDirs(): string[] {
  const out: string[] = [];
  const bases = ['/usr/local/lib', '/usr/lib', `${readEnv().home}/.local/lib`];
  for (const base of bases) {
    let entries: string[] = [];
    try {
      entries = readdirSync(base).filter((e) => e.startsWith('python3'));
    } catch {
      continue;
    }
    for (const py of entries) {
      for (const sp of ['site-packages', 'dist-packages']) {
        const nv = join(base, py, sp, 'nvidia');
        if (!existsSync(nv)) continue;
        for (const pkg of ['cu13', 'cuda_nvrtc', 'cublas', 'cuda_runtime', 'nvrtc']) {
          out.push(join(nv, pkg, 'lib'));
        }
      }
    }
  }
  return out;
}

/** Folders searched, in order, for every library. */
export function candidateDirs(): string[] {
  const dirs = [...readEnv().cudaLibDirs];
  dirs.push('/usr/local/nvidia/lib64', '/usr/local/nvidia/lib');
  for (const root of toolkitRoots()) {
    dirs.push(join(root, 'targets/x86_64-linux/lib'), join(root, 'lib64'));
  }
  dirs.push('/usr/lib/x86_64-linux-gnu', '/usr/lib64', '/lib/x86_64-linux-gnu');
  dirs.push(...wheelDirs());
  return [...new Set(dirs)];
}

/**
 * The path to load for `lib`: an existing file when one is found, else the bare soname
 * (the dynamic loader then decides). `tried` lists what was looked at, for error messages.
 */
export function findLibrary(lib: CudaLibrary): { path: string; tried: string[] } {
  const override = readEnv().libraryFile[lib];
  if (override) return { path: override, tried: [override] };
  const tried: string[] = [];
  for (const dir of candidateDirs()) {
    for (const name of SONAMES[lib]) {
      const p = join(dir, name);
      tried.push(p);
      if (existsSync(p)) return { path: p, tried };
    }
  }
  return { path: SONAMES[lib][0]!, tried };
}

/** The toolkit include folder (cuda_bf16.h etc.), or null; MOESERVE_CUDA_INCLUDE overrides. */
export function findCudaInclude(): string | null {
  const override = readEnv().cudaInclude;
  if (override) return override;
  for (const root of toolkitRoots()) {
    for (const sub of ['include', 'targets/x86_64-linux/include']) {
      if (existsSync(join(root, sub, 'cuda_bf16.h'))) return join(root, sub);
    }
  }
  return null;
}
