/**
 * Times loading a checkpoint onto the GPU (streamed reads, pinned staging, device NaN/Inf scan):
 *   node dist/gpu/bench/load-bench.js --model DIR [--repeat 2] [--json FILE]
 * Each repeat loads the whole model with the progress bar and summary line, then frees it; a
 * checkpoint just written (or loaded once) is in the page cache, so the repeats show warm-cache
 * speed. Prints one line per load; --json writes them.
 */
import { writeFileSync } from 'node:fs';
import type { Backend } from '../src/backend/backend.js';
import { createCudaBackend } from '../src/backend/cuda/cuda-backend.js';
import { loadModelWithStats } from '../src/model/load-model.js';
import { StreamLoadProgress, loadSummary } from '../src/model/weights/load-progress.js';
import type { LoadStats } from '../src/model/weights/weight-source.js';
import type { Tensor } from '../src/tensor/tensor.js';

function arg(name: string, fallback?: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

function freeAll(backend: Backend, w: unknown): void {
  if (w === null || typeof w !== 'object') return;
  if ('dtype' in w && 'shape' in w) return backend.free(w as Tensor);
  for (const v of Object.values(w)) freeAll(backend, v);
}

async function main(): Promise<void> {
  const dir = arg('model');
  if (!dir) throw new Error('--model DIR is required');
  const repeat = Number(arg('repeat', '2'));
  const gpu = await createCudaBackend();
  const runs: LoadStats[] = [];
  for (let r = 0; r < repeat; r++) {
    const { model, stats } = await loadModelWithStats(dir, {
      backend: gpu,
      progress: new StreamLoadProgress(process.stderr),
    });
    freeAll(gpu, model.weights);
    runs.push(stats);
    console.log(`load ${r + 1}/${repeat}: ${loadSummary(stats)}`);
  }
  const json = arg('json');
  if (json)
    writeFileSync(
      json,
      JSON.stringify(
        { model: dir, runs: runs.map((s) => ({ ...s, gbPerS: s.bytes / 1e9 / s.seconds })) },
        null,
        2,
      ),
    );
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 2;
});
