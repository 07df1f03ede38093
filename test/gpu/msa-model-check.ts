/**
 * A long prompt through a whole MSA model, CUDA against the CPU backend (issue 12): a random
 * MiniMax-M3 of reduced width (hidden 128, 4 query / 2 KV heads of 32, index 2 × 32; layer 0
 * dense attention + dense MLP, layer 1 MSA-sparse + MoE) with the real block size and top-k
 * (128, 16), one 8,320-token prompt (65 blocks: the sparse layer drops 49 of them), weights from
 * the dummy loader on the CPU, copied value for value to each CUDA backend. The CPU runs it once; CUDA runs it in
 * bf16 in one forward and in two chunks (5,000 + 3,320, the chunk boundary inside a block), and
 * in float32 mode. Checks, per CUDA run:
 * - logits of every position within the GPU tolerance of the CPU's (‖Δ‖/‖ref‖ per position),
 *   except positions whose routed experts differ (bf16 near-ties, counted and bounded) or
 *   whose selected blocks differ on a tied row (below): the sparse MoE layer is the last one,
 *   so a flipped route or block changes only its own token;
 * - the sparse layer's selected blocks identical to the CPU's on every (index head, token) row
 *   whose CPU scores are not tied at the selection boundary within the score error between
 *   the two backends' index inputs (computed on the host for each differing row).
 */
import type { Backend, BatchMeta, MsaOptions } from '../../src/backend/backend.js';
import type { ForwardBatch } from '../../src/backend/forward-batch.js';
import type { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import { parseModelConfig, type ModelConfig } from '../../src/config/model-config.js';
import { allocKvCache } from '../../src/model/minimax-m3/kv-cache.js';
import { MiniMaxM3Model } from '../../src/model/minimax-m3/minimax-m3-model.js';
import { loadModelWeights, type ModelWeights } from '../../src/model/minimax-m3/weights.js';
import { DummyWeightSource } from '../../src/model/weights/dummy-source.js';
import { PRESETS } from '../../src/model/weights/random-presets.js';
import { SingleRankCommunicator } from '../../src/parallel/communicator.js';
import { SINGLE_RANK } from '../../src/parallel/parallel-layout.js';
import type { Tensor } from '../../src/tensor/tensor.js';
import type { Row } from './check-util.js';

const L = 8320;
const CHUNK = 5000;
const BLOCK = 128;
const TOPK = 16;
/** Per-position logit error limit (bf16 activations through two layers), and f32 mode's. */
const BF16_LIMIT = 2e-2;
const F32_LIMIT = 1e-3;
/** Positions whose routes may differ in bf16 (near-tied router scores), at most. */
const MAX_ROUTE_FLIPS = 0.02;

export function msaModelConfig(): ModelConfig {
  const ones = [0, 1];
  return parseModelConfig(
    {
      ...PRESETS['tiny']!(),
      hidden_size: 128,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: 32,
      rotary_dim: 16,
      vocab_size: 512,
      max_position_embeddings: 16384,
      dense_intermediate_size: 192,
      intermediate_size: 64,
      shared_intermediate_size: 64,
      num_local_experts: 8,
      num_experts_per_tok: 2,
      moe_layer_freq: ones,
      eos_token_id: 511,
      sparse_attention_config: {
        use_sparse_attention: true,
        sparse_index_dim: 32,
        sparse_num_index_heads: 2,
        sparse_topk_blocks: TOPK,
        sparse_block_size: BLOCK,
        sparse_init_block: 0,
        sparse_local_block: 1,
        sparse_score_type: 'max',
        sparse_attention_freq: ones,
        sparse_disable_index_value: ones,
      },
    },
    'msa-model-check',
  );
}

/** Random weights from the dummy loader on the CPU. */
async function cpuWeights(cpu: Backend, cfg: ModelConfig): Promise<ModelWeights> {
  const src = new DummyWeightSource(cfg, cpu, 5);
  const w = loadModelWeights(src, cpu, { parallel: SINGLE_RANK, fuseSharedExperts: true });
  await src.load();
  return w;
}

const isTensor = (x: unknown): x is Tensor =>
  typeof x === 'object' && x !== null && 'shape' in x && 'dtype' in x && 'device' in x;

/** The same weights on `to` (value for value: f32 mode then holds the CPU's bf16 values). */
function copyWeights<W>(from: Backend, to: Backend, w: W): W {
  const copy = (x: unknown): unknown => {
    if (isTensor(x)) return to.upload(from.readF32(x), x.shape, x.dtype);
    if (Array.isArray(x)) return x.map(copy);
    if (typeof x === 'object' && x !== null)
      return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, copy(v)]));
    return x;
  };
  return copy(w) as W;
}

/** One msaSelect call as the model made it: its index queries and the ids it chose. */
interface Selection {
  idxQ: Float32Array; // [T, Hi·Di]
  ids: Int32Array; // [Hi, T, topk]
  numCached: number;
}

interface Run {
  logits: Float32Array; // [L, V]
  routes: Int32Array; // [L, K'] of the MoE layer
  sel: Selection[];
  indexK: Float32Array; // [P, S, Di] of the sparse layer, after the prompt
}

/** The prompt through `be` in chunks of `chunk` tokens, recording the sparse layer's selections. */
export async function runPrompt(
  be: Backend,
  cfg: ModelConfig,
  chunk: number,
  weights: ModelWeights,
): Promise<Run> {
  const model = new MiniMaxM3Model(cfg, weights, be, new SingleRankCommunicator());
  const pages = Math.ceil(L / BLOCK);
  const kv = allocKvCache(be, cfg, SINGLE_RANK, pages + 1, BLOCK);
  const pageTable = Int32Array.from({ length: pages }, (_, p) => pages - p); // reversed pages
  const sel: Selection[] = [];
  const target = be as unknown as { msaSelect: Backend['msaSelect'] };
  const orig = target.msaSelect;
  let numCached = 0;
  target.msaSelect = (out: Tensor, idxQ: Tensor, idxK: Tensor, meta: BatchMeta, o: MsaOptions) => {
    orig.call(be, out, idxQ, idxK, meta, o);
    sel.push({ idxQ: be.readF32(idxQ), ids: be.readI32(out), numCached });
  };
  const logits: Float32Array[] = [];
  const routes: Int32Array[] = [];
  try {
    for (let c = 0; c < L; c += chunk) {
      const n = Math.min(chunk, L - c);
      numCached = c;
      const batch: ForwardBatch = {
        tokenIds: Int32Array.from({ length: n }, (_, i) => ((c + i) * 7919 + 3) % cfg.vocabSize),
        seqs: [{ numCached: c, numNew: n, pageTable }],
        pageSize: BLOCK,
        logitsFor: 'all',
        captureRoutedExperts: true,
      };
      const r = await model.forward(batch, kv);
      logits.push(r.logits);
      routes.push(r.routedExperts['1']!);
    }
  } finally {
    target.msaSelect = orig;
  }
  const indexK = be.readF32(kv.layers[1]!.indexK!);
  return {
    logits: concat(logits),
    routes: concatI(routes),
    sel,
    indexK: remap(indexK, pageTable, cfg),
  };
}

function concat(xs: Float32Array[]): Float32Array {
  const out = new Float32Array(xs.reduce((n, x) => n + x.length, 0));
  let o = 0;
  for (const x of xs) out.set(x, (o += x.length) - x.length);
  return out;
}
function concatI(xs: Int32Array[]): Int32Array {
  const out = new Int32Array(xs.reduce((n, x) => n + x.length, 0));
  let o = 0;
  for (const x of xs) out.set(x, (o += x.length) - x.length);
  return out;
}

/** The index-key cache in token order: [L, Di]. */
function remap(cache: Float32Array, pageTable: Int32Array, cfg: ModelConfig): Float32Array {
  const Di = cfg.sparse!.indexDim;
  const out = new Float32Array(L * Di);
  for (let j = 0; j < L; j++) {
    const off = (pageTable[Math.floor(j / BLOCK)]! * BLOCK + (j % BLOCK)) * Di;
    out.set(cache.subarray(off, off + Di), j * Di);
  }
  return out;
}

/** Per selection row (index head h, prompt token t): the ids and the index query. */
function rowsOf(run: Run, Hi: number, Di: number) {
  const ids = new Int32Array(Hi * L * TOPK);
  const q = new Float32Array(L * Hi * Di);
  for (const s of run.sel) {
    const T = s.idxQ.length / (Hi * Di);
    q.set(s.idxQ, s.numCached * Hi * Di);
    for (let h = 0; h < Hi; h++)
      ids.set(s.ids.subarray(h * T * TOPK, (h + 1) * T * TOPK), (h * L + s.numCached) * TOPK);
  }
  return { ids, q };
}

/** Block-max scores of one row over candidate blocks 0..t/S (token-ordered keys). */
function scores(q: Float32Array, qOff: number, k: Float32Array, t: number, Di: number): number[] {
  const nb = Math.floor(t / BLOCK) + 1;
  const out: number[] = [];
  for (let b = 0; b < nb; b++) {
    let best = -Infinity;
    for (let j = b * BLOCK; j <= Math.min(t, b * BLOCK + BLOCK - 1); j++) {
      let d = 0;
      for (let e = 0; e < Di; e++) d += q[qOff + e]! * k[j * Di + e]!;
      best = Math.max(best, d);
    }
    out.push(best);
  }
  return out;
}

/**
 * Rows whose ids differ, split by whether the CPU's boundary gap (16th chosen vs best left out,
 * local block excluded) exceeds twice the largest score difference between the two runs' inputs.
 */
function compareSelections(gpu: Run, cpu: Run, cfg: ModelConfig) {
  const { numIndexHeads: Hi, indexDim: Di } = cfg.sparse!;
  const g = rowsOf(gpu, Hi, Di);
  const c = rowsOf(cpu, Hi, Di);
  let untied = 0;
  let tied = 0;
  let rows = 0;
  const differ = new Set<number>(); // tokens with a differing selection
  for (let h = 0; h < Hi; h++) {
    for (let t = 0; t < L; t++) {
      const r = (h * L + t) * TOPK;
      if (Math.floor(t / BLOCK) + 1 <= TOPK) continue;
      rows++;
      let same = true;
      for (let i = 0; i < TOPK; i++) same &&= g.ids[r + i] === c.ids[r + i];
      if (same) continue;
      differ.add(t);
      const qOff = (t * Hi + h) * Di;
      const sc = scores(c.q, qOff, cpu.indexK, t, Di);
      const sg = scores(g.q, qOff, gpu.indexK, t, Di);
      let err = 0;
      for (let b = 0; b < sc.length; b++) err = Math.max(err, Math.abs(sc[b]! - sg[b]!));
      const others = sc.slice(0, -1).sort((x, y) => y - x); // the local block is forced
      const gap = others[TOPK - 2]! - others[TOPK - 1]!;
      if (gap > 2 * err) untied++;
      else tied++;
    }
  }
  return { untied, tied, rows, differ };
}

/**
 * Per-position ‖Δ‖/‖ref‖ of the logits; positions whose routes differ, or (`blocksDiffer`) whose
 * selected blocks differ (tied rows), are counted apart.
 */
function compareLogits(gpu: Run, cpu: Run, V: number, blocksDiffer: Set<number>) {
  const K = cpu.routes.length / L;
  let worst = 0;
  let flips = 0;
  let worstFlipped = 0;
  let worstTied = 0;
  for (let t = 0; t < L; t++) {
    let same = true;
    for (let i = 0; i < K; i++) same &&= gpu.routes[t * K + i] === cpu.routes[t * K + i];
    let num = 0;
    let den = 0;
    for (let v = 0; v < V; v++) {
      const d = gpu.logits[t * V + v]! - cpu.logits[t * V + v]!;
      num += d * d;
      den += cpu.logits[t * V + v]! ** 2;
    }
    const e = Math.sqrt(num / Math.max(den, 1e-30));
    if (!same) {
      flips++;
      worstFlipped = Math.max(worstFlipped, e);
    } else if (blocksDiffer.has(t)) worstTied = Math.max(worstTied, e);
    else worst = Math.max(worst, e);
  }
  return { worst, flips, worstFlipped, worstTied };
}

export async function checkMsaModel(
  cpu: Backend,
  gpu: CudaBackend,
  gpu32: CudaBackend,
): Promise<Row[]> {
  const cfg = msaModelConfig();
  const weights = await cpuWeights(cpu, cfg);
  const t0 = performance.now();
  const ref = await runPrompt(cpu, cfg, L, weights);
  const cpuS = ((performance.now() - t0) / 1e3).toFixed(1);
  const rows: Row[] = [];
  const runs: [string, CudaBackend, number, number][] = [
    ['bf16, one forward', gpu, L, BF16_LIMIT],
    [`bf16, chunks of ${CHUNK}`, gpu, CHUNK, BF16_LIMIT],
    ['f32 mode, one forward', gpu32, L, F32_LIMIT],
  ];
  for (const [label, be, chunk, limit] of runs) {
    const run = await runPrompt(be, cfg, chunk, copyWeights(cpu, be, weights));
    const sel = compareSelections(run, ref, cfg);
    const lg = compareLogits(run, ref, cfg.vocabSize, sel.differ);
    rows.push({
      check: `MSA model ${L} tokens (${label}): worst position logits vs CPU (CPU ${cpuS} s)`,
      value: lg.worst.toExponential(2),
      limit: limit.toExponential(0),
      pass: lg.worst <= limit,
    });
    rows.push({
      check: `  positions with other routed experts (worst ${lg.worstFlipped.toExponential(1)})`,
      value: `${lg.flips}/${L}`,
      limit: `<= ${MAX_ROUTE_FLIPS * L}`,
      pass: lg.flips <= MAX_ROUTE_FLIPS * L,
    });
    rows.push({
      check: `  selected blocks: untied rows differing (tied rows differing ${sel.tied}, at ${sel.differ.size} positions, worst logits there ${lg.worstTied.toExponential(1)})`,
      value: `${sel.untied}/${sel.rows}`,
      limit: '0',
      pass: sel.untied === 0 && sel.rows > 0,
    });
  }
  return rows;
}
