/**
 * `npm run bench:cpu [-- --threads N] [--baseline DIR] [--kv-cache-dtype bf16]`: the CPU
 * backend on this machine.
 * - the core clock, measured (dependent-add chain), and the peaks derived from it;
 * - matmul GFLOP/s (WASM SIMD on 1 and N threads, the JS kernel) beside numpy/OpenBLAS;
 * - attention + MSA selection GFLOP/s (WASM against the float64 JS kernels);
 * - the bundled model (models/moeserve-tiny-m3): prefill 128/512, decode B = 1, 8, 32 at
 *   context 256 and B = 1 at context 4,000, on N threads and on 1.
 * `--baseline DIR` also runs DIR/dist/backend/cpu/cpu-backend.js (another build of this
 * repository, e.g. a checkout of an older commit) row by row beside this one.
 * `--kv-cache-dtype bf16` adds N-thread rows with bf16 KV caches (CpuBackendOptions).
 * Steady state only: warm-up calls are never timed; medians. The model rows of a step time
 * their backends interleaved, the order rotated each step (cpu/interleave.ts: timed one after
 * another, whichever went first paid extra CPU time). Prints tables and appends a
 * record to docs/benchmarks/cpu.json. Takes about 2 minutes on 2 cores.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { Backend } from '../backend/backend.js';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
import { CpuKernels } from '../backend/cpu/wasm/cpu-kernels.js';
import { fusedMultiplyAdd } from '../backend/cpu/wasm/fused-multiply-add.js';
import { readEnv } from '../config/env.js';
import { blasReference, type BlasResult, type BlasRow } from './cpu/blas-reference.js';
import { measureClockGhz } from './cpu/clock.js';
import { benchAttention, benchMatmul, type KernelRow } from './cpu/kernel-bench.js';
import { startShare } from './cpu/machine-share.js';
import { benchModel, type BenchBackend, type ModelRow } from './cpu/model-bench.js';

const BUNDLED_MODEL = fileURLToPath(new URL('../../models/moeserve-tiny-m3', import.meta.url));

const SHAPES = [
  [1, 4096, 1024],
  [16, 1024, 1024],
  [128, 1024, 1024],
  [512, 768, 256],
] as const;

const pad = (s: string | number, n: number): string => String(s).padStart(n);
/** Other processes' share of the cores over a section (see machine-share.ts). */
const othersNote = (share: ReturnType<typeof startShare>): string => {
  const o = share(1).othersBusy;
  return o === null
    ? 'others: —'
    : `other processes used ${(100 * o).toFixed(0)}% of the cores meanwhile`;
};
const fmt = (x: number, d = 1): string => x.toFixed(d);

async function baselineBackend(dir: string): Promise<Backend> {
  const url = pathToFileURL(resolve(dir, 'dist/backend/cpu/cpu-backend.js')).href;
  const mod = (await import(url)) as { CpuBackend: new () => Backend };
  return new mod.CpuBackend();
}

function matmulSection(threads: number, wasmPeak: number): { mm: KernelRow[]; blas: BlasResult } {
  const share = startShare();
  const k1 = new CpuKernels({ threads: 1 });
  const kN = new CpuKernels({ threads });
  const mm: KernelRow[] = [];
  for (const [M, N, K] of SHAPES) {
    mm.push(...benchMatmul(k1, 'wasm 1 thread', M, N, K, true));
    if (threads > 1) mm.push(...benchMatmul(kN, `wasm ${threads} threads`, M, N, K, false));
  }
  k1.close();
  kN.close();
  const others = othersNote(share); // before numpy runs (its process counts as another)
  const blas1 = blasReference(SHAPES, 1);
  const blasN = threads > 1 ? blasReference(SHAPES, threads) : { rows: [], note: '' };
  const blas: BlasRow[] = [...blas1.rows, ...blasN.rows];
  console.log(
    `\nmatmul out[M,N] = x[M,K]·w[N,K]ᵀ, float32, median of 9 (reference: ${blas1.note}); ${others}`,
  );
  console.log(
    'shape (MxNxK)    kernel                             ms   GFLOP/s  % WASM peak×thr  vs BLAS same threads  load',
  );
  for (const r of mm) {
    const t = r.kernel.startsWith('wasm') ? Number(/(\d+) thread/.exec(r.kernel)![1]) : 1;
    const ref = blas.find((b) => b.shape === r.what && b.threads === t);
    const ratio = ref ? `${fmt(r.gflops / ref.gflops, 2)}× (${fmt(ref.gflops)})` : '—';
    // prettier-ignore
    console.log(`${r.what.padEnd(16)} ${r.kernel.padEnd(31)} ${pad(fmt(r.ms, 3), 8)} ${pad(fmt(r.gflops), 9)} ${pad(fmt((100 * r.gflops) / (wasmPeak * t), 0) + '%', 16)} ${pad(ratio, 21)} ${pad(fmt(r.load, 2), 5)}`);
  }
  return { mm, blas: { note: blas1.note, rows: blas } };
}

function attentionSection(threads: number): KernelRow[] {
  const share = startShare();
  const k1 = new CpuKernels({ threads: 1 });
  const kN = new CpuKernels({ threads });
  const at: KernelRow[] = [];
  const cases = [[1, 0, 512], [1, 4000, 1], [32, 256, 1]] as const; // prettier-ignore
  for (const [B, ctx, n] of cases) {
    at.push(...benchAttention(k1, 'wasm 1 thread', B, ctx, n, true));
    if (threads > 1) at.push(...benchAttention(kN, `wasm ${threads} threads`, B, ctx, n, false));
  }
  k1.close();
  kN.close();
  console.log(
    `\nattention (dense + MSA-sparse) + MSA selection, bundled shapes (H 4, Hkv 2, Dh 64, S 16, top-4); ${othersNote(share)}`,
  );
  console.log('case                  kernel              ms   GFLOP/s  load');
  // prettier-ignore
  for (const r of at) console.log(`${r.what.padEnd(21)} ${r.kernel.padEnd(16)} ${pad(fmt(r.ms, 3), 8)} ${pad(fmt(r.gflops), 9)} ${pad(fmt(r.load, 2), 5)}`);
  return at;
}

async function modelSection(
  threads: number,
  baseline: string | undefined,
  kvBf16: boolean,
): Promise<ModelRow[]> {
  const backends: BenchBackend[] = [];
  if (baseline) backends.push({ label: 'baseline', backend: await baselineBackend(baseline) });
  const bN = new CpuBackend({ threads });
  const b1 = threads > 1 ? new CpuBackend({ threads: 1 }) : null;
  const b16 = kvBf16 ? new CpuBackend({ threads, kvCacheDtype: 'bf16' }) : null;
  const label = `${threads} thread${threads > 1 ? 's' : ''}`;
  backends.push({ label, backend: bN });
  if (b1) backends.push({ label: '1 thread', backend: b1 });
  if (b16) backends.push({ label: `${label} bf16 KV`, backend: b16 });
  const model = await benchModel(BUNDLED_MODEL, backends, {
    prefillLens: [128, 512],
    decode: [
      [1, 256],
      [8, 256],
      [32, 256],
      [1, 4000],
    ],
  });
  for (const b of [bN, b1, b16]) b?.close();
  console.log('\nbundled model (models/moeserve-tiny-m3), steady state, median step');
  console.log(
    "(cpu ms: this process's CPU time per timed step, all threads; others: other processes' share of all cores during the row)",
  );
  console.log('step                  backend              tok/s   ms/step   cpu ms  others  load');
  const share = (x: number | null): string => (x === null ? '—' : `${fmt(100 * x, 0)}%`);
  // prettier-ignore
  for (const r of model) console.log(`${r.what.padEnd(21)} ${r.backend.padEnd(17)} ${pad(fmt(r.tokS, 0), 8)} ${pad(fmt(r.ms, 3), 9)} ${pad(fmt(r.cpuMs, 3), 8)} ${pad(share(r.othersBusy), 7)} ${pad(fmt(r.load, 2), 5)}`);
  return model;
}

function appendRecord(record: object): void {
  mkdirSync('docs/benchmarks', { recursive: true });
  const file = 'docs/benchmarks/cpu.json';
  let history: unknown[] = [];
  try {
    history = JSON.parse(readFileSync(file, 'utf8')) as unknown[];
  } catch {
    history = [];
  }
  writeFileSync(file, JSON.stringify([...history, record], null, 2) + '\n');
  console.log(`\nwrote ${file}`);
}

const HELP = `Usage: npm run bench:cpu -- [--threads N] [--baseline DIR] [--kv-cache-dtype bf16]

The CPU backend on this machine: its clock (measured; MOESERVE_CPU_MHZ overrides), matmul
and attention kernels at 1 and N threads beside numpy/OpenBLAS (when python3 has numpy),
and the bundled model (prefill 128/512, decode B = 1, 8, 32 at context 256, B = 1 at 4,000).
Steady state, medians; appends a record to docs/benchmarks/cpu.json.

  --threads N     threads of the threaded rows (default: the available cores, here ${availableParallelism()})
  --baseline DIR  also run the model rows on another build of this repository
                  (DIR/dist/backend/cpu/cpu-backend.js), row by row beside this one
  --kv-cache-dtype bf16
                  also run the model rows on N threads with bf16 KV caches (opt-in, outside
                  the golden rule: CpuBackendOptions.kvCacheDtype)
  -h, --help      this text`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      threads: { type: 'string' },
      baseline: { type: 'string' },
      'kv-cache-dtype': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  const threads = Number(values.threads ?? availableParallelism());
  if (!Number.isInteger(threads) || threads < 1)
    throw new Error(`--threads: ${values.threads} is not a positive integer`);
  const mhz = readEnv().cpuMhz;
  const ghz = mhz ? mhz / 1000 : measureClockGhz();
  const clockFrom = mhz ? 'MOESERVE_CPU_MHZ' : 'measured';
  // AVX-512 f32: 2 FMA pipes × 16 lanes × 2 flops = 64 flops/cycle. WASM SIMD is 128-bit:
  // at best 2 multiplies + 2 adds of 4 lanes (Zen 5: 2 FMUL + 2 FADD pipes) = 16, and with
  // relaxed-SIMD FMA (the packed kernels where the runtime fuses) 2 FMA of 4 lanes = 16 too;
  // FMA halves the instructions per flop, not the peak.
  const avx512Peak = 64 * ghz;
  const wasmPeak = 16 * ghz;
  const load0 = loadavg()[0]!;
  // prettier-ignore
  console.log(`CPU: ${cpus()[0]?.model ?? '?'}, ${cpus().length} cores, clock ${fmt(ghz, 2)} GHz (${clockFrom}) (/proc/cpuinfo: ${cpus()[0]?.speed ?? '?'} MHz); load ${fmt(load0, 2)}`);
  // prettier-ignore
  console.log(`per-core peaks at that clock: AVX-512 f32 FMA ${fmt(avx512Peak, 0)} GFLOP/s, 128-bit WASM SIMD (mul + add, or FMA) ${fmt(wasmPeak, 1)} GFLOP/s`);
  const { mm, blas } = matmulSection(threads, wasmPeak);
  const attention = attentionSection(threads);
  const kvDtype = values['kv-cache-dtype'] ?? 'auto';
  if (kvDtype !== 'auto' && kvDtype !== 'bf16')
    throw new Error(`--kv-cache-dtype: ${kvDtype} (auto or bf16)`);
  const model = await modelSection(threads, values.baseline, kvDtype === 'bf16');
  appendRecord({
    date: new Date().toISOString(),
    cpu: cpus()[0]?.model,
    cores: cpus().length,
    threads,
    fma: fusedMultiplyAdd(),
    clock_ghz: ghz,
    clock_from: clockFrom,
    load_start: load0,
    load_end: loadavg()[0],
    avx512_peak_gflops_per_core: avx512Peak,
    wasm_simd_peak_gflops_per_core: wasmPeak,
    matmul: mm,
    blas,
    attention,
    model,
  });
}

await main();
