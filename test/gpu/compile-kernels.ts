/**
 * Compiles every kernels/*.cu with NVRTC without a GPU (NVRTC alone), printing errors,
 * spills (ptxas report) and times; with --cache DIR it also writes the cubins under the names
 * kernel-cache.ts looks for, so a GPU run can start from a warm cache (MOESERVE_KERNEL_CACHE).
 *   MOESERVE_LIBNVRTC=/path/libnvrtc.so.13 node dist/gpu/test/gpu/compile-kernels.js [--arch sm_90] [--cache DIR] [-v]
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadNvrtcOnly } from '../../src/backend/cuda/ffi.js';
import { gemvDefines, gemvTuneFor } from '../../src/backend/cuda/fp8-gemv.js';
import {
  compileOptions,
  cubinName,
  findKernelDir,
  nvrtcCompile,
} from '../../src/backend/cuda/kernel-cache.js';

/** -D variants compiled per file (the ones the model and the checks use). */
const VARIANTS: Record<string, Record<string, string | number>[]> = {
  attention: [
    { ATTN_T: 'bf16_t', ATTN_MH: 4, ATTN_MD: 4 },
    { ATTN_T: 'bf16_t', ATTN_MH: 1, ATTN_MD: 1 },
    { ATTN_T: 'float', ATTN_MH: 4, ATTN_MD: 4 },
    { ATTN_T: 'float', ATTN_MH: 1, ATTN_MD: 1 },
  ],
  'attention-prefill': [{ FA_DH: 128 }],
  'attention-prefill-wg': [{ FA_SPARSE: 0 }],
  // The MoE tiles (no defines) and the plain GEMM's knob sets matmul uses (1-8, 9-16, 17-32 tokens).
  'fp8-gemv': [{}, ...[1, 9, 17].map((m) => gemvDefines(gemvTuneFor(m)))],
};

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const arch = arg('--arch') ?? 'sm_90';
const cacheDir = arg('--cache');
const verbose = process.argv.includes('-v');
const dir = findKernelDir();
const nvrtc = loadNvrtcOnly();
const maj = [0];
const min = [0];
nvrtc.nvrtcVersion(maj, min);
const version = `${maj[0]}.${min[0]}`;
const names = readdirSync(dir)
  .filter((f) => f.endsWith('.cuh'))
  .sort();
const headers = { names, sources: names.map((n) => readFileSync(join(dir, n), 'utf8')) };
if (cacheDir) mkdirSync(cacheDir, { recursive: true });
let failed = 0;
for (const f of readdirSync(dir)
  .filter((x) => x.endsWith('.cu'))
  .sort()) {
  const file = f.replace(/\.cu$/, '');
  const source = readFileSync(join(dir, f), 'utf8');
  for (const defs of VARIANTS[file] ?? [{}]) {
    const d = Object.entries(defs)
      .map(([k, v]) => `-D${k}=${v}`)
      .sort();
    const options = [...compileOptions(arch, file), ...d];
    const t0 = performance.now();
    try {
      const { cubin, log } = nvrtcCompile(nvrtc, f, source, headers, [
        ...options,
        '--ptxas-options=-v',
      ]);
      const spills = log
        .split('\n')
        .filter((l) => /spill/.test(l) && !/ 0 bytes spill stores, 0 bytes spill loads/.test(l));
      console.log(
        `${f} ${d.join(' ')}: ${cubin.length} B in ${(performance.now() - t0).toFixed(0)} ms${spills.length ? `; spills: ${spills.length} kernels` : ''}`,
      );
      if (verbose) console.log(log);
      if (cacheDir) {
        // The cache key uses the options without the ptxas report flag.
        const clean = nvrtcCompile(nvrtc, f, source, headers, options).cubin;
        writeFileSync(join(cacheDir, cubinName(file, source, headers, options, version)), clean);
      }
    } catch (e) {
      failed++;
      console.log(`${f} ${d.join(' ')}: FAILED\n${(e as Error).message}`);
    }
  }
}
process.exitCode = failed ? 1 : 0;
