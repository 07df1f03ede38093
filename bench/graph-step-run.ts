/**
 * The graph step of a `--load-format dummy` model, for bench:serve-gpu (a separate process, so
 * the GPU is free again for the server afterwards):
 *   node dist/gpu/bench/graph-step-run.js --model DIR --batches 1,8,32,64 --context 1152 --json FILE
 * The model is loaded exactly as `serve --load-format dummy --backend cuda` loads it.
 */
import { writeFileSync } from 'node:fs';
import { createCudaBackend } from '../src/backend/cuda/cuda-backend.js';
import { loadModel } from '../src/model/load-model.js';
import { allocKvCache, defaultPageSize } from '../src/model/minimax-m3/kv-cache.js';
import { decodeBatch, timeGraphStep } from './graph-step.js';

function arg(name: string, fallback?: string): string {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? process.argv[i + 1] : fallback;
  if (v === undefined) throw new Error(`--${name} is required`);
  return v;
}

async function main(): Promise<void> {
  const batches = arg('batches', '1,8,32,64').split(',').map(Number);
  const context = Number(arg('context', '1152'));
  const gpu = await createCudaBackend();
  const model = await loadModel(arg('model'), { backend: gpu, loadFormat: 'dummy' });
  const page = defaultPageSize(model.cfg);
  const pagesPerSeq = Math.ceil((context + 1) / page);
  const kv = allocKvCache(
    gpu,
    model.cfg,
    model.layout,
    1 + Math.max(...batches) * pagesPerSeq,
    page,
  );
  const rows: { batch: number; graphMs: number }[] = [];
  for (const B of batches) {
    const batch = decodeBatch(B, context, pagesPerSeq, model.cfg.vocabSize, page);
    await model.forward(batch, kv); // warm-up: kernels compiled, workspaces sized
    const graphMs = await timeGraphStep(gpu, model, kv, batch, pagesPerSeq);
    console.log(`graph step B=${B} context ${context}: ${graphMs.toFixed(3)} ms`);
    rows.push({ batch: B, graphMs });
  }
  writeFileSync(arg('json'), JSON.stringify({ context, rows }, null, 2));
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 2;
});
