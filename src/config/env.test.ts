import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readEnv } from './env.js';

describe('readEnv (the one reader of environment variables)', () => {
  it('gives the documented defaults for an empty environment', () => {
    const e = readEnv({});
    expect(e.cudaSkinny).toBe(true);
    expect(e.debug).toBe(false);
    expect(e.cudaLibDirs).toEqual([]);
    expect(e.libraryFile).toEqual({
      cuda: undefined,
      nvrtc: undefined,
      cublas: undefined,
      cublasLt: undefined,
      nccl: undefined,
    });
    expect(e.hangWatchdogSeconds).toBeUndefined();
    expect(e.home).toBe('/root');
    expect(e.cudaRoots).toEqual([]);
    expect(e.modelThread).toBeUndefined(); // serve decides by the cores left
  });

  it('reads MOESERVE_MODEL_THREAD as on, off, or unset for anything else', () => {
    expect(readEnv({ MOESERVE_MODEL_THREAD: '1' }).modelThread).toBe(true);
    expect(readEnv({ MOESERVE_MODEL_THREAD: '0' }).modelThread).toBe(false);
    expect(readEnv({ MOESERVE_MODEL_THREAD: 'yes' }).modelThread).toBeUndefined();
  });

  it('parses lists, switches and numbers, and treats empty or invalid values as unset', () => {
    const e = readEnv({
      MOESERVE_CUDA_LIB_DIR: '/a::/b',
      MOESERVE_CUDA_SKINNY: '0',
      MOESERVE_LIBNCCL: '/x/libnccl.so.2',
      MOESERVE_HANG_WATCHDOG_S: '2.5',
      MOESERVE_CPU_MHZ: 'fast',
      MOESERVE_KERNEL_DIR: '',
      CUDA_PATH: '/opt/cuda',
    });
    expect(e.cudaLibDirs).toEqual(['/a', '/b']);
    expect(e.cudaSkinny).toBe(false);
    expect(e.libraryFile.nccl).toBe('/x/libnccl.so.2');
    expect(e.hangWatchdogSeconds).toBe(2.5);
    expect(e.cpuMhz).toBeUndefined();
    expect(e.kernelDir).toBeUndefined();
    expect(e.cudaRoots).toEqual(['/opt/cuda']);
  });

  it('reads every library variable the README documents, and the README names every one', () => {
    const src = readFileSync(new URL('./env.ts', import.meta.url), 'utf8');
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const names = (text: string) =>
      new Set(
        [...text.matchAll(/MOESERVE_([A-Z_]+)(\{[A-Z,]+\})?/g)].flatMap(([, base, alts]) =>
          alts
            ? alts
                .slice(1, -1)
                .split(',')
                .map((a) => `MOESERVE_${base}${a}`)
            : [`MOESERVE_${base}`],
        ),
      );
    const testOnly = ['MOESERVE_GOLDEN', 'MOESERVE_SHARED', 'MOESERVE_TINY_MODEL'];
    const inReadme = [...names(readme)].filter((n) => !testOnly.includes(n)).sort();
    expect(inReadme).toEqual([...names(src)].sort());
  });
});
