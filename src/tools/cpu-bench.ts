/**
 * `npm run bench:cpu`: the CPU backend's matmul GFLOP/s against this machine's peak, and
 * prefill / decode tokens/s of a small MiniMax-M3 (random weights, the bundled model's shape).
 * Prints a table and writes docs/benchmarks/cpu.json.
 */
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, readFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
import { matmulF32 } from '../backend/cpu/ops/matmul.js';
import { CpuKernels } from '../backend/cpu/wasm/cpu-kernels.js';
import { argmax, generateTokens } from '../model/generate.js';
import { loadModel } from '../model/load-model.js';
import { runForward } from '../model/run-forward.js';
import { writeRandomCheckpoint } from '../model/weights/random-checkpoint.js';
import { PRESETS, withNumLayers } from '../model/weights/random-presets.js';
import { readEnv } from '../config/env.js';

function cpuinfoMhz(): number {
  try {
    const m = /cpu MHz\s*:\s*([\d.]+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function time(fn: () => void, reps: number): number {
  fn(); // warm-up (JIT)
  const ts: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    fn();
    ts.push(performance.now() - t0);
  }
  return median(ts);
}

interface MatmulRow {
  shape: string;
  kernel: 'wasm-simd' | 'js';
  ms: number;
  gflops: number;
}

/** The WASM SIMD kernel (operands in the heap) and the JS fallback on the same shape. */
function benchMatmul(M: number, N: number, K: number): MatmulRow[] {
  const k = new CpuKernels();
  const fill = (n: number): Float32Array => {
    const a = k.heap.f32(n); // filled in place: .map() would copy out of the heap
    for (let i = 0; i < n; i++) a[i] = Math.random() - 0.5;
    return a;
  };
  const [x, w, out] = [fill(M * K), fill(N * K), k.heap.f32(M * N)];
  const flop = 2 * M * N * K;
  const simd = time(() => k.matmul(out, x, w, M, N, K), 5);
  const js = time(() => matmulF32(out, x, w, M, N, K), 3);
  return [
    { shape: `${M}x${N}x${K}`, kernel: 'wasm-simd', ms: simd, gflops: flop / (simd * 1e6) },
    { shape: `${M}x${N}x${K}`, kernel: 'js', ms: js, gflops: flop / (js * 1e6) },
  ];
}

/** The bundled model's shape (hidden 256, 6 layers, 8 experts top-2, MSA block 16). */
function smallConfig(): Record<string, unknown> {
  const raw = withNumLayers(PRESETS['tiny']!(), 6);
  const sparse = raw['sparse_attention_config'] as Record<string, unknown>;
  return {
    ...raw,
    hidden_size: 256,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 64,
    rotary_dim: 32,
    vocab_size: 4096,
    intermediate_size: 256,
    shared_intermediate_size: 256,
    dense_intermediate_size: 768,
    sparse_attention_config: {
      ...sparse,
      sparse_index_dim: 64,
      sparse_num_index_heads: 2,
      sparse_block_size: 16,
      sparse_topk_blocks: 4,
    },
  };
}

async function benchModel(): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'moeserve-bench-'));
  try {
    writeRandomCheckpoint({ config: smallConfig(), outDir: dir, dtype: 'bf16', seed: 1 });
    const model = await loadModel(dir, { backend: new CpuBackend() });
    const result: Record<string, number> = {};
    for (const T of [128, 512]) {
      const ids = Array.from({ length: T }, (_, i) => (i * 7919) % model.cfg.vocabSize);
      await runForward(model, ids.slice(0, 16)); // warm-up
      const t0 = performance.now();
      await runForward(model, ids);
      result[`prefill_${T}_tok_s`] = T / ((performance.now() - t0) / 1000);
    }
    const prompt = Array.from({ length: 32 }, (_, i) => i + 1);
    const decode = async (n: number): Promise<number> => {
      let count = 0;
      for await (const _ of generateTokens(model, prompt, {
        maxTokens: n,
        eosTokenIds: [],
        pick: argmax,
      }))
        count++;
      return count;
    };
    await decode(16); // warm-up (JIT)
    const t0 = performance.now();
    const count = await decode(256);
    result['decode_tok_s'] = count / ((performance.now() - t0) / 1000);
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const cpu = cpus()[0];
  const mhz = cpu?.speed || (readEnv().cpuMhz ?? cpuinfoMhz());
  // JS arithmetic is scalar float64: at best one multiply and one add per cycle per core.
  const scalarPeak = (2 * mhz) / 1000;
  const simdPeak = (64 * mhz) / 1000; // AVX-512: 2 FMA units × 16 f32 lanes × 2 flops
  const shapes = [
    [1, 4096, 1024],
    [16, 1024, 1024],
    [128, 1024, 1024],
    [512, 768, 256],
  ] as const;
  const mm = shapes.flatMap(([M, N, K]) => benchMatmul(M, N, K));
  console.log(`CPU: ${cpu?.model ?? '?'} @ ${mhz} MHz, ${cpus().length} cores; one thread used`);
  console.log('\nmatmul, median of 5 (wasm-simd: f32x4 accumulation; js: float64 accumulation)');
  console.log('shape (MxNxK)    kernel        ms    GFLOP/s  % scalar peak  % SIMD peak');
  for (const r of mm) {
    console.log(
      `${r.shape.padEnd(16)} ${r.kernel.padEnd(9)} ${r.ms.toFixed(2).padStart(7)} ${r.gflops.toFixed(2).padStart(10)} ${((100 * r.gflops) / scalarPeak).toFixed(0).padStart(12)}% ${((100 * r.gflops) / simdPeak).toFixed(1).padStart(10)}%`,
    );
  }
  const model = await benchModel();
  console.log('\nsmall MiniMax-M3 (hidden 256, 6 layers, 8 experts top-2, vocab 4096), batch 1');
  for (const [k, v] of Object.entries(model)) console.log(`${k.padEnd(22)} ${v.toFixed(1)}`);
  const out = {
    date: new Date().toISOString(),
    cpu: cpu?.model,
    mhz,
    cores: cpus().length,
    scalar_peak_gflops: scalarPeak,
    simd_peak_gflops: simdPeak,
    matmul: mm,
    model,
  };
  mkdirSync('docs/benchmarks', { recursive: true });
  const file = 'docs/benchmarks/cpu.json';
  let history: unknown[] = [];
  try {
    history = JSON.parse(readFileSync(file, 'utf8')) as unknown[];
  } catch {
    history = [];
  }
  writeFileSync(file, JSON.stringify([...history, out], null, 2) + '\n');
  console.log(`\nwrote ${file}`);
}

await main();
