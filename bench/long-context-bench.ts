/**
 * Long-context bench (issue 12), one GPU: for each context L, the time to first token of one
 * L-token prompt (prefill from an empty cache, whole prompt or --chunk-token chunks as the
 * server's --max-num-batched-tokens makes them, host-timed to the logits, median of --reps)
 * and the decode step at context L (batch 1, CUDA graph replay, device time), on the
 * real-dimension model (3 dense + N MoE layers; the MoE layers are MSA-sparse, block 128,
 * top-16, local block forced) with random weights built on the GPU.
 *   node dist/gpu/bench/long-context-bench.js [--moe-layers 1] [--contexts 8192,32768,100000]
 *        [--chunk 0] [--reps 2] [--msa-scoring tensor-cores|scalar] [--out DIR]
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
import { buildGpuWeights, realConfig } from '../test/gpu/real-model.js';
import { decodeBatch, timeGraphStep } from './graph-step.js';

const PAGE = 128;

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

/** The prompt's forward batches: one, or chunks of `chunk` tokens over the same page table. */
function prefillBatches(L: number, chunk: number, vocab: number): ForwardBatch[] {
  const pageTable = Int32Array.from({ length: Math.ceil((L + 1) / PAGE) }, (_, p) => 1 + p);
  const step = chunk > 0 ? chunk : L;
  const out: ForwardBatch[] = [];
  for (let c = 0; c < L; c += step) {
    const n = Math.min(step, L - c);
    out.push({
      tokenIds: Int32Array.from({ length: n }, (_, i) => ((c + i) * 104729 + 7) % vocab),
      seqs: [{ numCached: c, numNew: n, pageTable }],
      pageSize: PAGE,
      logitsFor: 'last',
    });
  }
  return out;
}

async function ttft(model: MiniMaxM3Model, kv: KvCache, batches: ForwardBatch[]): Promise<number> {
  const t0 = performance.now();
  for (const b of batches) await model.forward(b, kv);
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const out = arg('out', process.env['OUT'] ?? '.');
  const numMoe = Number(arg('moe-layers', '1'));
  const contexts = arg('contexts', '8192,32768,100000').split(',').map(Number);
  const chunk = Number(arg('chunk', '0'));
  const reps = Number(arg('reps', '2'));
  const msaScoring = arg('msa-scoring', 'tensor-cores') as MsaScoring;
  if (msaScoring !== 'scalar' && msaScoring !== 'tensor-cores')
    throw new Error(`--msa-scoring must be scalar or tensor-cores, not ${String(msaScoring)}`);
  const gpu = await createCudaBackend({ msaScoring });
  const cfg = realConfig(numMoe);
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
  const rows: { context: number; ttftMs: number; decodeMs: number }[] = [];
  for (const L of contexts) {
    const batches = prefillBatches(L, chunk, cfg.vocabSize);
    const ms: number[] = [];
    for (let r = 0; r < reps; r++) ms.push(await ttft(model, kv, batches));
    const pagesPerSeq = Math.ceil((L + 1) / PAGE);
    const decode = decodeBatch(1, L, pagesPerSeq, cfg.vocabSize, PAGE);
    await model.forward(decode, kv); // eager first: workspaces sized before capture
    const decodeMs = await timeGraphStep(gpu, model, kv, decode, pagesPerSeq);
    const row = { context: L, ttftMs: median(ms), decodeMs };
    console.log(
      `context ${L}: TTFT ${row.ttftMs.toFixed(0)} ms, decode ${decodeMs.toFixed(3)} ms/token`,
    );
    rows.push(row);
  }
  const md = [
    `Model: MiniMax-M3 real dimensions, ${cfg.numLayers} layers (3 dense + ${numMoe} MoE/MSA), random weights; MSA scoring ${msaScoring}; prefill ${chunk > 0 ? `in ${chunk}-token chunks` : 'in one forward'}.`,
    '',
    '| context | TTFT ms | TTFT / TTFT(first) | decode ms/token (graph) | decode / decode(first) |',
    '|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.context} | ${r.ttftMs.toFixed(0)} | ${(r.ttftMs / rows[0]!.ttftMs).toFixed(2)} | ${r.decodeMs.toFixed(3)} | ${(r.decodeMs / rows[0]!.decodeMs).toFixed(2)} |`,
    ),
    '',
  ].join('\n');
  mkdirSync(out, { recursive: true });
  writeFileSync(
    join(out, 'long-context-bench.json'),
    JSON.stringify({ msaScoring, chunk, rows }, null, 2),
  );
  writeFileSync(join(out, 'long-context-bench.md'), md);
  console.log(`\n${md}`);
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 2;
});
