/**
 * The decode step as a replayed CUDA graph (device time between CUDA events, median), shared
 * by bench:gpu and bench:serve-gpu so both quote the same number for a model and batch.
 */
import type { ForwardBatch } from '../src/backend/forward-batch.js';
import type { CudaBackend } from '../src/backend/cuda/cuda-backend.js';
import { DecodeGraphs, padDecodeBatch } from '../src/backend/cuda/decode-graphs.js';
import type { KvCache } from '../src/model/minimax-m3/kv-cache.js';
import type { MiniMaxM3Model } from '../src/model/minimax-m3/minimax-m3-model.js';
import { median } from '../test/gpu/check-util.js';

/** B sequences, each `context` tokens cached, one new token; pages 1.. (page 0 pads). */
export function decodeBatch(
  B: number,
  context: number,
  pagesPerSeq: number,
  vocab: number,
  pageSize: number,
): ForwardBatch {
  return {
    tokenIds: Int32Array.from({ length: B }, (_, i) => (i * 7919 + 13) % vocab),
    seqs: Array.from({ length: B }, (_, s) => ({
      numCached: context,
      numNew: 1,
      pageTable: Int32Array.from({ length: pagesPerSeq }, (_, p) => 1 + s * pagesPerSeq + p),
    })),
    pageSize,
    logitsFor: 'last',
  };
}

/** How timeGraphStep replays: `iters` timed replays after one untimed one, or after untimed
 * replays for `settleMs`; then `profileReplays` more inside a profiler range (ncu
 * `--profile-from-start off --graph-profiling node` sees those graph nodes and nothing else). */
export interface GraphStepTiming {
  readonly iters?: number;
  readonly settleMs?: number;
  readonly profileReplays?: number;
}

/**
 * Captures the decode step of `batch` (logits into a device buffer, as the engine's graphs do)
 * and returns the median replay in ms. settleMs: right after a one-shot 100k prefill (multi-GB
 * tensors cuMemFree'd) the step runs up to ~1.6x slower for ~100 ms (long-context.md, session 8).
 */
export async function timeGraphStep(
  gpu: CudaBackend,
  model: MiniMaxM3Model,
  kv: KvCache,
  batch: ForwardBatch,
  pagesPerSeq: number,
  { iters = 20, settleMs = 0, profileReplays = 0 }: GraphStepTiming = {},
): Promise<number> {
  const B = batch.seqs.length;
  const logitsBuf = gpu.alloc([B, model.cfg.vocabSize], 'f32'); // [B, V]
  const enqueue = (b: ForwardBatch) => model.forwardInto(b, kv, logitsBuf).then(() => {});
  const graphs = new DecodeGraphs(gpu, enqueue, {
    sizes: [B],
    maxPagesPerSeq: pagesPerSeq,
    padPage: 0,
  });
  try {
    const padded = padDecodeBatch(batch, B, 0, pagesPerSeq);
    const graph = await graphs.graphFor(padded);
    gpu.metaStore.stage(padded);
    const dev = gpu.dev;
    const a = dev.createEvent();
    const b = dev.createEvent();
    const ms: number[] = [];
    graph.launch();
    for (const settle = performance.now() + settleMs; performance.now() < settle;) {
      dev.sync(); // one replay at a time, as a decode loop runs them
      graph.launch();
    }
    for (let r = 0; r < iters; r++) {
      dev.record(a);
      graph.launch();
      dev.record(b);
      ms.push(dev.elapsed(a, b));
    }
    if (profileReplays > 0)
      dev.profiled(() => {
        for (let r = 0; r < profileReplays; r++) {
          graph.launch();
          dev.sync(); // one replay at a time, as timed
        }
      });
    return median(ms);
  } finally {
    graphs.destroy();
    gpu.free(logitsBuf);
  }
}
