/**
 * Long-context bench (issue 12), one GPU, on the real-dimension model (3 dense + N MoE layers;
 * the MoE layers are MSA-sparse, block 128, top-16, local block forced) with random weights
 * built on the GPU:
 * - for each context L, the time to first token of one L-token prompt (prefill from an empty
 *   cache, whole prompt or --chunk-token chunks as the server's --max-num-batched-tokens makes
 *   them, host-timed to the logits, median of --reps after one untimed forward; 1 rep past
 *   32k), its rate in TFLOP/s
 *   and as a fraction of the cuBLAS GEMM rate measured in the same run (bench:gpu's FLOP
 *   count), and the decode step at context L (batch 1, CUDA graph replay, device time, median
 *   of 20 after 500 ms of untimed steps; also the first 20 steps right after the prefill);
 * - the dense prefill attention kernel alone (CUDA events) at --attention-tokens, for each
 *   block shape (query heads per block, rows per warp), and MSA-sparse attention over a random
 *   selection as routed and on the decode kernel (sparse-attention-time.ts);
 * - per-op device time of one eager prefill at --profile tokens.
 *   node dist/gpu/bench/long-context-bench.js [--moe-layers 1] [--contexts 2048,8192,32768,100000]
 *        [--chunk 0] [--reps 2] [--msa-scoring tensor-cores|scalar]
 *        [--attention-tokens 2048,8192,32768] [--profile 0] [--skip-ceilings] [--out DIR]
 * Writes long-context-bench.json and long-context-bench.md under --out (default $OUT or .).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ForwardBatch } from '../src/backend/forward-batch.js';
import { createCudaBackend } from '../src/backend/cuda/cuda-backend.js';
import type { MsaScoring } from '../src/backend/cuda/msa-ops.js';
import { allocKvCache, type KvCache } from '../src/model/minimax-m3/kv-cache.js';
import { MiniMaxM3Model } from '../src/model/minimax-m3/minimax-m3-model.js';
import { SingleRankCommunicator } from '../src/parallel/communicator.js';
import { median } from '../test/gpu/check-util.js';
import { profileOps } from '../test/gpu/op-profile.js';
import { buildGpuWeights, realConfig } from '../test/gpu/real-model.js';
import { smoke } from '../test/gpu/smoke.js';
import { decodeBatch, timeGraphStep } from './graph-step.js';
import { prefillFlops } from './prefill-flops.js';
import { KERNEL_KEYS, timePrefillAttention } from './prefill-attention-time.js';
import { timeSparseAttention } from './sparse-attention-time.js';
import { PAGE, prefill } from './long-context-util.js';

/** Untimed decode replays before the steady decode step is timed. */
const SETTLE_MS = 500;

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}
/** A comma list of token counts; 0 (e.g. `--attention-tokens 0`) for none. */
const list = (s: string): number[] =>
  s
    .split(',')
    .map(Number)
    .filter((n) => n > 0);

/** The prompt's forward batches (long-context-util's `prefill`) over pages 1.. of its length. */
function prefillBatches(L: number, chunk: number, vocab: number): ForwardBatch[] {
  const pageTable = Int32Array.from({ length: Math.ceil((L + 1) / PAGE) }, (_, p) => 1 + p);
  return prefill(L, chunk, pageTable, vocab);
}

async function ttft(model: MiniMaxM3Model, kv: KvCache, batches: ForwardBatch[]): Promise<number> {
  const t0 = performance.now();
  for (const b of batches) await model.forward(b, kv);
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const out = arg('out', process.env['OUT'] ?? '.');
  const numMoe = Number(arg('moe-layers', '1'));
  const contexts = list(arg('contexts', '2048,8192,32768,100000'));
  const chunk = Number(arg('chunk', '0'));
  const reps = Number(arg('reps', '2'));
  const msaScoring = arg('msa-scoring', 'tensor-cores') as MsaScoring;
  if (msaScoring !== 'scalar' && msaScoring !== 'tensor-cores')
    throw new Error(`--msa-scoring must be scalar or tensor-cores, not ${String(msaScoring)}`);
  const gpu = await createCudaBackend({ msaScoring });
  const gemmTflops = process.argv.includes('--skip-ceilings') ? 0 : smoke(gpu).gemmTflops;
  const cfg = realConfig(numMoe);
  const attention = list(arg('attention-tokens', '2048,8192,32768')).map((T) => {
    const r = timePrefillAttention(gpu, cfg, T);
    const sp = timeSparseAttention(gpu, cfg, T);
    console.log(
      `attention kernel T=${T}: ${KERNEL_KEYS.map((key) => `${key} ${(r[`tflops_${key}`] ?? 0).toFixed(0)}`).join(', ')} TFLOP/s; ` +
        `MSA-sparse (random selection) ${sp.ms_sparse_default.toFixed(2)} ms as routed, ${sp.ms_sparse_decode_kernel.toFixed(2)} ms on the decode kernel (outputs differ by ${sp.rel_diff_sparse.toExponential(2)})`,
    );
    return { ...r, ...sp };
  });
  const weights = await buildGpuWeights(gpu, cfg, true);
  const model = new MiniMaxM3Model(cfg, weights, gpu, new SingleRankCommunicator());
  const maxL = Math.max(...contexts);
  const kv = allocKvCache(
    gpu,
    cfg,
    { tpRank: 0, tpSize: 1 },
    2 + Math.ceil((maxL + 1) / PAGE),
    PAGE,
  );
  // Warm-up: kernels compiled, workspaces grown for the largest prompt's chunks.
  await ttft(
    model,
    kv,
    prefillBatches(Math.min(maxL, chunk > 0 ? chunk : 4096), chunk, cfg.vocabSize),
  );
  const profileT = Number(arg('profile', '0'));
  let profile: Record<string, number> = {};
  if (profileT > 0) {
    const b = prefillBatches(profileT, chunk, cfg.vocabSize);
    await ttft(model, kv, b); // first use of these shapes (cuBLAS, workspaces) not profiled
    const prof = await profileOps(gpu, () => ttft(model, kv, b));
    profile = Object.fromEntries(prof.map(([k, v]) => [k, Number(v.toFixed(3))]));
    console.log(
      `per-op device ms, prefill ${profileT}: ${prof
        .slice(0, 10)
        .map(([k, v]) => `${k} ${v.toFixed(2)}`)
        .join('; ')}`,
    );
  }
  const rows: Record<string, number>[] = [];
  for (const L of contexts) {
    const batches = prefillBatches(L, chunk, cfg.vocabSize);
    const ms: number[] = [];
    // Past 32k one rep (seconds each); else one untimed first forward at this size, then reps.
    if (L <= 32768) await ttft(model, kv, batches);
    for (let r = 0; r < (L > 32768 ? 1 : reps); r++) ms.push(await ttft(model, kv, batches));
    const pagesPerSeq = Math.ceil((L + 1) / PAGE);
    const decode = decodeBatch(1, L, pagesPerSeq, cfg.vocabSize, PAGE);
    await model.forward(decode, kv); // eager first: workspaces sized before capture
    // Right after the prefill (as runs 1-3 measured it), then the steady step a generation
    // runs at: after a one-shot prefill past ~20k tokens the first ~100 ms of steps are slower
    // (its >1 GiB tensors were cuMemFree'd; long-context.md, session 8).
    const time = (settleMs: number) =>
      timeGraphStep(gpu, model, kv, decode, pagesPerSeq, { settleMs });
    const [decodeFirstMs, decodeMs] = [await time(0), await time(SETTLE_MS)];
    const ttftMs = median(ms);
    const tflops = prefillFlops(cfg, L) / (ttftMs * 1e-3) / 1e12;
    const fractionOfGemm = tflops / gemmTflops;
    const row = { context: L, ttftMs, tflops, fractionOfGemm, decodeMs, decodeFirstMs };
    console.log(
      `context ${L}: TTFT ${ttftMs.toFixed(0)} ms (${tflops.toFixed(0)} TFLOP/s), decode ${decodeMs.toFixed(3)} ms/token (first 20 steps after the prefill ${decodeFirstMs.toFixed(3)})`,
    );
    rows.push(row);
  }
  const md = markdown(cfg.numLayers, numMoe, msaScoring, chunk, gemmTflops, rows, attention);
  mkdirSync(out, { recursive: true });
  writeFileSync(
    join(out, 'long-context-bench.json'),
    JSON.stringify({ msaScoring, chunk, gemmTflops, rows, attention, profileT, profile }, null, 2),
  );
  writeFileSync(join(out, 'long-context-bench.md'), md);
  console.log(`\n${md}`);
}

function markdown(
  layers: number,
  numMoe: number,
  msaScoring: string,
  chunk: number,
  gemmTflops: number,
  rows: Record<string, number>[],
  attention: Record<string, number>[],
): string {
  const first = rows[0]!;
  const f = (x: number | undefined, d = 0) => (x === undefined ? '-' : x.toFixed(d));
  return [
    `Model: MiniMax-M3 real dimensions, ${layers} layers (3 dense + ${numMoe} MoE/MSA), random weights; MSA scoring ${msaScoring}; prefill ${chunk > 0 ? `in ${chunk}-token chunks` : 'in one forward'}; cuBLAS GEMM ${f(gemmTflops)} TFLOP/s.`,
    '',
    `| context | TTFT ms | TTFT / TTFT(first) | prefill TFLOP/s | % of GEMM | decode ms/token (graph, after ${SETTLE_MS} ms of steps) | decode / decode(first) | first 20 steps after the prefill, ms |`,
    '|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r['context']} | ${f(r['ttftMs'])} | ${f(r['ttftMs']! / first['ttftMs']!, 2)} | ${f(r['tflops'])} | ${f(100 * r['fractionOfGemm']!)} | ${f(r['decodeMs'], 3)} | ${f(r['decodeMs']! / first['decodeMs']!, 2)} | ${f(r['decodeFirstMs'], 3)} |`,
    ),
    '',
    `| attention tokens | ${KERNEL_KEYS.map((key) => `${key}: ms (TFLOP/s)`).join(' | ')} |`,
    `|---|${KERNEL_KEYS.map(() => '---|').join('')}`,
    ...attention.map(
      (r) =>
        `| ${r['tokens']} | ${KERNEL_KEYS.map((key) => `${f(r[`ms_${key}`], 2)} (${f(r[`tflops_${key}`])})`).join(' | ')} |`,
    ),
    '',
  ].join('\n');
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 2;
});
