/**
 * MSA-sparse prefill attention alone (bench:long-context): one T-token sequence, each token
 * selecting its own block and (where it has more than top-k candidates) top-k - 1 random earlier
 * blocks of 128 keys, per KV head: the near-random selection of random weights, where a query
 * tile's union of selections covers almost every block. Times the kernel the backend picks
 * (attention-ops.ts: the prefill kernel's sparse form up to SPARSE_PREFILL_MAX_KEYS) against the
 * wgmma prefill kernel's sparse form ('wgmma') and the decode kernel (one token per block) on the
 * same data, CUDA events, median of 3.
 */
import { attentionDecode } from '../src/backend/cuda/attention-decode.js';
import { attention } from '../src/backend/cuda/attention-ops.js';
import type { CudaBatchMeta } from '../src/backend/cuda/batch-meta.js';
import type { CudaBackend } from '../src/backend/cuda/cuda-backend.js';
import type { CudaTensor } from '../src/backend/cuda/cuda-tensor.js';
import type { ForwardBatch } from '../src/backend/forward-batch.js';
import type { ModelConfig } from '../src/config/model-config.js';
import { median, relErr } from '../test/gpu/check-util.js';

const PAGE = 128;

/** [Hkv, T, topk] block ids: own block first, then distinct random earlier ones, -1 padded. */
export function randomSelection(T: number, Hkv: number, topk: number, seed: number): Int32Array {
  const out = new Int32Array(Hkv * T * topk).fill(-1);
  let s = seed >>> 0;
  const rnd = (n: number) => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) % n;
  for (let g = 0; g < Hkv; g++)
    for (let t = 0; t < T; t++) {
      const own = Math.floor(t / PAGE);
      const row = (g * T + t) * topk;
      if (own + 1 <= topk) {
        for (let b = 0; b <= own; b++) out[row + b] = b;
        continue;
      }
      const picked = new Set<number>([own]);
      while (picked.size < topk) picked.add(rnd(own));
      [...picked].forEach((b, i) => (out[row + i] = b));
    }
  return out;
}

export interface SparseAttentionTimes {
  readonly tokens: number;
  /** The kernel attention-ops.ts routes the batch to. */
  readonly ms_sparse_default: number;
  /** The wgmma prefill kernel's sparse form (attention-ops 'wgmma'). */
  readonly ms_sparse_wgmma: number;
  readonly ms_sparse_decode_kernel: number;
  /** ‖routed − decode kernel‖ / ‖decode kernel‖ on these inputs (both bf16 outputs). */
  readonly rel_diff_sparse: number;
}

export function timeSparseAttention(
  gpu: CudaBackend,
  cfg: ModelConfig,
  T: number,
): SparseAttentionTimes {
  const { numHeads: H, numKvHeads: Hkv, headDim: Dh } = cfg;
  const topk = cfg.sparse?.topkBlocks ?? 16;
  const pages = Math.ceil(T / PAGE);
  const q = gpu.alloc([T, H * Dh], 'bf16') as CudaTensor;
  const k = gpu.alloc([pages, PAGE, Hkv * Dh], 'bf16') as CudaTensor;
  const v = gpu.alloc([pages, PAGE, Hkv * Dh], 'bf16') as CudaTensor;
  const o = gpu.alloc([T, H * Dh], 'bf16') as CudaTensor;
  gpu.fillRandom(q, 21, 2);
  gpu.fillRandom(k, 22, 1);
  gpu.fillRandom(v, 23, 1);
  const blocks = gpu.upload(randomSelection(T, Hkv, topk, 5), [Hkv, T, topk], 'i32');
  const batch: ForwardBatch = {
    tokenIds: new Int32Array(T),
    seqs: [{ numCached: 0, numNew: T, pageTable: Int32Array.from({ length: pages }, (_, p) => p) }],
    pageSize: PAGE,
    logitsFor: 'last',
  };
  const meta = gpu.prepareBatch(batch) as CudaBatchMeta;
  const opts = { numHeads: H, numKvHeads: Hkv, headDim: Dh, scale: 1 / Math.sqrt(Dh), blocks };
  const dev = gpu.dev;
  const [a, b] = [dev.createEvent(), dev.createEvent()];
  const time = (run: () => void): number => {
    run();
    const ms: number[] = [];
    for (let r = 0; r < 3; r++) {
      dev.record(a);
      run();
      dev.record(b);
      ms.push(dev.elapsed(a, b));
    }
    return median(ms);
  };
  const msDefault = time(() => attention(gpu.ctx, o, q, k, v, meta, opts));
  const routed = gpu.readF32(o);
  const msWgmma = time(() => attention(gpu.ctx, o, q, k, v, meta, opts, 'wgmma'));
  const msDecode = time(() => attentionDecode(gpu.ctx, { qo: o, qi: q, kc: k, vc: v }, meta, opts));
  const row = {
    tokens: T,
    ms_sparse_default: msDefault,
    ms_sparse_wgmma: msWgmma,
    ms_sparse_decode_kernel: msDecode,
    rel_diff_sparse: relErr(routed, gpu.readF32(o)),
  };
  for (const t of [q, k, v, o, blocks]) gpu.free(t);
  return row;
}
