/**
 * The real-dimension model on CUDA against the same weights on the CPU backend: a prefill of
 * `T` tokens (every position's logits) and two decode steps replayed from CUDA graphs.
 * Reports per-position ‖Δ‖/‖ref‖ of the logits (limit 2e-2), top-1 agreement where the CPU's
 * top-1 margin exceeds the error, and expert choices (K routed ids per token and MoE layer).
 */
import type { ForwardBatch } from '../../src/backend/forward-batch.js';
import type { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import { DecodeGraphs } from '../../src/backend/cuda/decode-graphs.js';
import { allocKvCache } from '../../src/model/minimax-m3/kv-cache.js';
import { MiniMaxM3Model } from '../../src/model/minimax-m3/minimax-m3-model.js';
import { SingleRankCommunicator } from '../../src/parallel/communicator.js';
import { argmax } from './check-util.js';
import { compareLogits } from './golden-check.js';
import { LazyExpertCpuBackend, mirrorWeights } from './real-model.js';

const PAGE = 128;

function rowsOf(logits: Float32Array, n: number): Float32Array[] {
  const V = logits.length / n;
  return Array.from({ length: n }, (_, i) => logits.subarray(i * V, (i + 1) * V));
}

function expertAgreement(
  got: Record<string, Int32Array>,
  ref: Record<string, Int32Array>,
  T: number,
  K: number,
): { rows: number; differing: number } {
  let rows = 0;
  let differing = 0;
  for (const [layer, r] of Object.entries(ref)) {
    const g = got[layer];
    const w = r.length / T;
    for (let t = 0; t < T; t++) {
      rows++;
      const a = Array.from(r.subarray(t * w, t * w + K))
        .sort((x, y) => x - y)
        .join(',');
      const b = g
        ? Array.from(g.subarray(t * w, t * w + K))
            .sort((x, y) => x - y)
            .join(',')
        : '';
      if (a !== b) differing++;
    }
  }
  return { rows, differing };
}

export async function realCheck(
  gpu: CudaBackend,
  model: MiniMaxM3Model,
  T: number,
): Promise<Record<string, unknown>> {
  const cfg = model.cfg;
  const t0 = performance.now();
  const cpu = new LazyExpertCpuBackend(gpu);
  const cpuModel = new MiniMaxM3Model(
    cfg,
    mirrorWeights(gpu, cpu, model.weights),
    cpu,
    new SingleRankCommunicator(),
  );
  console.log(`mirrored weights to the CPU in ${((performance.now() - t0) / 1e3).toFixed(1)} s`);
  const pages = Math.ceil((T + 2) / PAGE);
  const pageTable = Int32Array.from({ length: pages }, (_, i) => 1 + i);
  const kvG = allocKvCache(gpu, cfg, { tpRank: 0, tpSize: 1 }, pages + 1, PAGE);
  const kvC = allocKvCache(cpu, cfg, { tpRank: 0, tpSize: 1 }, pages + 1, PAGE);
  const ids = Int32Array.from({ length: T }, (_, i) => ((i * 2654435761) % cfg.vocabSize) >>> 0);
  const prefill: ForwardBatch = {
    tokenIds: ids,
    seqs: [{ numCached: 0, numNew: T, pageTable }],
    pageSize: PAGE,
    logitsFor: 'all',
    captureRoutedExperts: true,
  };
  const g = await model.forward(prefill, kvG);
  const t1 = performance.now();
  const c = await cpuModel.forward(prefill, kvC);
  console.log(
    `CPU reference prefill of ${T} tokens: ${((performance.now() - t1) / 1e3).toFixed(1)} s`,
  );
  const pre = compareLogits(rowsOf(g.logits, T), rowsOf(c.logits, T));
  const experts = expertAgreement(g.routedExperts, c.routedExperts, T, cfg.numExpertsPerTok);
  // Two decode steps: the GPU replays a captured graph (batch 1), the CPU runs eagerly.
  const logitsBuf = gpu.alloc([2, cfg.vocabSize], 'f32'); // [2, V]
  const graphs = new DecodeGraphs(gpu, (b) => model.forwardInto(b, kvG, logitsBuf).then(() => {}), {
    sizes: [1, 2],
    maxPagesPerSeq: pages,
    padPage: 0,
  });
  let next = argmax(c.logits, (T - 1) * cfg.vocabSize, cfg.vocabSize);
  const decode: Record<string, number>[] = [];
  for (let s = 0; s < 2; s++) {
    const batch: ForwardBatch = {
      tokenIds: Int32Array.of(next),
      seqs: [{ numCached: T + s, numNew: 1, pageTable }],
      pageSize: PAGE,
      logitsFor: 'last',
    };
    await graphs.replay(batch);
    const gg = gpu.readF32(gpu.rows(logitsBuf, 0, 1));
    const cc = await cpuModel.forward(batch, kvC);
    const d = compareLogits([gg], [cc.logits]);
    decode.push({ step: s, rel: d.maxRel, top1Flips: d.top1Mismatch, top1Checked: d.top1Checked });
    next = argmax(cc.logits);
  }
  graphs.destroy();
  gpu.free(logitsBuf);
  const result = {
    tokens: T,
    prefillMaxRel: pre.maxRel,
    prefillTop1Flips: `${pre.top1Mismatch}/${pre.top1Checked}`,
    expertRowsDiffering: `${experts.differing}/${experts.rows}`,
    decode,
    pass:
      pre.maxRel < 2e-2 &&
      pre.top1Mismatch === 0 &&
      decode.every((d) => d['rel']! < 2e-2 && d['top1Flips'] === 0),
  };
  console.log(`real-dimension check: ${JSON.stringify(result)}`);
  return result;
}
