/**
 * Shared by the long-context decode probes (long-context-decode-probe.ts,
 * decode-after-free-probe.ts): argument parsing, two sequences' page tables, the prompt's
 * prefill batches, the decode batch, and a captured decode graph that can be timed replay by
 * replay (device ms between CUDA events) before it is destroyed.
 */
import type { ForwardBatch } from '../src/backend/forward-batch.js';
import type { CudaBackend } from '../src/backend/cuda/cuda-backend.js';
import { DecodeGraphs, padDecodeBatch } from '../src/backend/cuda/decode-graphs.js';
import type { KvCache } from '../src/model/minimax-m3/kv-cache.js';
import type { MiniMaxM3Model } from '../src/model/minimax-m3/minimax-m3-model.js';

export const PAGE = 128;

export function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

export const stamp = (what: string) => console.log(`[${new Date().toISOString()}] ${what}`);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Page table of an L-token sequence `base` (0 = A, 1 = B) that owns pages 1 + base·pages ...
 * (page 0 pads); as long as L needs, as long-context-bench's, so its page stride matches.
 */
export const pagesOf = (pages: number, base: number, L: number) =>
  Int32Array.from({ length: Math.ceil((L + 1) / PAGE) }, (_, p) => 1 + base * pages + p);

export function prefill(
  L: number,
  chunk: number,
  pageTable: Int32Array,
  vocab: number,
): ForwardBatch[] {
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

export const decodeOf = (L: number, pageTable: Int32Array): ForwardBatch => ({
  tokenIds: Int32Array.of(13),
  seqs: [{ numCached: L, numNew: 1, pageTable }],
  pageSize: PAGE,
  logitsFor: 'last',
});

/** A captured decode graph that can be replayed (timed) several times before it is destroyed. */
export async function capture(
  gpu: CudaBackend,
  model: MiniMaxM3Model,
  kv: KvCache,
  b: ForwardBatch,
) {
  const stride = b.seqs[0]!.pageTable.length;
  const logits = gpu.alloc([1, model.cfg.vocabSize], 'f32'); // [1, V]
  const graphs = new DecodeGraphs(gpu, (x) => model.forwardInto(x, kv, logits).then(() => {}), {
    sizes: [1],
    maxPagesPerSeq: stride,
    padPage: 0,
  });
  const padded = padDecodeBatch(b, 1, 0, stride);
  const graph = await graphs.graphFor(padded);
  gpu.metaStore.stage(padded);
  const dev = gpu.dev;
  const [e0, e1] = [dev.createEvent(), dev.createEvent()];
  graph.launch();
  return {
    time(iters: number): number[] {
      const ms: number[] = [];
      for (let r = 0; r < iters; r++) {
        dev.record(e0);
        graph.launch();
        dev.record(e1);
        ms.push(dev.elapsed(e0, e1));
      }
      return ms;
    },
    /** Per replay: [host ms since `since` when it was launched, device ms]. */
    series(iters: number, since: number): [number, number][] {
      const out: [number, number][] = [];
      for (let r = 0; r < iters; r++) {
        const at = performance.now() - since;
        dev.record(e0);
        graph.launch();
        dev.record(e1);
        out.push([at, dev.elapsed(e0, e1)]);
      }
      return out;
    },
    destroy(): void {
      graphs.destroy();
      gpu.free(logits);
    },
  };
}
