/**
 * Dense causal prefill attention alone (bench:long-context, bench:gpu --attention-alone): one
 * T-token sequence of random bf16 q/k/v at the model's shapes, each prefill kernel and block
 * shape timed by CUDA events (median of 3 after one untimed launch), as TFLOP/s of causal math.
 */
import { attentionPrefill, type PrefillTiling } from '../src/backend/cuda/attention-ops.js';
import { attentionPrefillWg, wgPrefillFits } from '../src/backend/cuda/attention-prefill-wg.js';
import type { CudaBatchMeta } from '../src/backend/cuda/batch-meta.js';
import type { CudaBackend } from '../src/backend/cuda/cuda-backend.js';
import type { ForwardBatch } from '../src/backend/forward-batch.js';
import type { ModelConfig } from '../src/config/model-config.js';
import { median, relErr } from '../test/gpu/check-util.js';
import { causalAttentionFlops } from './prefill-flops.js';
import { randomSelection } from './sparse-attention-time.js';

const PAGE = 128;

/** mma.sync block shapes compared (the first is its default), then the wgmma kernel ('wg'). */
export const TILINGS: readonly PrefillTiling[] = [
  { heads: 1, mTiles: 2 },
  { heads: 2, mTiles: 2 },
  { heads: 2, mTiles: 1 },
  { heads: 1, mTiles: 1 },
];
export const tilingKey = (t: PrefillTiling): string => `h${t.heads}m${t.mTiles}`;
/** Column keys of a row: the mma.sync tilings, then wg (and ws: wg with FA_WS, when asked). */
export const KERNEL_KEYS: readonly string[] = [...TILINGS.map(tilingKey), 'wg', 'ws'];

/**
 * ms_<key> and tflops_<key> for every kernel of KERNEL_KEYS at T tokens; with `loaderWarp`
 * also the wgmma kernel's FA_WS variant, dense and MSA-sparse over a random selection
 * (ms_sparse_wg, ms_sparse_ws), and how far its outputs are from the plain kernel's.
 */
export function timePrefillAttention(
  gpu: CudaBackend,
  cfg: ModelConfig,
  T: number,
  loaderWarp = false,
): Record<string, number> {
  const { numHeads: H, numKvHeads: Hkv, headDim: Dh } = cfg;
  const pages = Math.ceil(T / PAGE);
  const q = gpu.alloc([T, H * Dh], 'bf16'); // [T, H·Dh]
  const k = gpu.alloc([pages, PAGE, Hkv * Dh], 'bf16'); // [P, S, Hkv·Dh]
  const v = gpu.alloc([pages, PAGE, Hkv * Dh], 'bf16');
  const o = gpu.alloc([T, H * Dh], 'bf16');
  gpu.fillRandom(q, 11, 2);
  gpu.fillRandom(k, 12, 1);
  gpu.fillRandom(v, 13, 1);
  const batch: ForwardBatch = {
    tokenIds: new Int32Array(T),
    seqs: [{ numCached: 0, numNew: T, pageTable: Int32Array.from({ length: pages }, (_, p) => p) }],
    pageSize: PAGE,
    logitsFor: 'last',
  };
  const meta = gpu.prepareBatch(batch) as CudaBatchMeta;
  const opts = {
    numHeads: H,
    numKvHeads: Hkv,
    headDim: Dh,
    scale: 1 / Math.sqrt(Dh),
    blocks: null,
  };
  const dev = gpu.dev;
  const [a, b] = [dev.createEvent(), dev.createEvent()];
  const row: Record<string, number> = { tokens: T };
  const time = (key: string, launch: () => void) => {
    launch();
    const ms: number[] = [];
    for (let r = 0; r < 3; r++) {
      dev.record(a);
      launch();
      dev.record(b);
      ms.push(dev.elapsed(a, b));
    }
    row[`ms_${key}`] = median(ms);
    row[`tflops_${key}`] = causalAttentionFlops(T, H, Dh) / (median(ms) * 1e-3) / 1e12;
  };
  for (const t of TILINGS)
    time(tilingKey(t), () => attentionPrefill(gpu.ctx, o, q, k, v, meta, opts, t));
  if (wgPrefillFits(gpu.ctx, k, opts)) {
    time('wg', () => attentionPrefillWg(gpu.ctx, o, q, k, v, meta, opts));
    if (loaderWarp) {
      const wg = gpu.readF32(o);
      time('ws', () => attentionPrefillWg(gpu.ctx, o, q, k, v, meta, opts, { loaderWarp }));
      row['rel_ws_wg'] = relErr(gpu.readF32(o), wg);
      const topk = cfg.sparse?.topkBlocks ?? 16;
      const blocks = gpu.upload(randomSelection(T, Hkv, topk, 5), [Hkv, T, topk], 'i32');
      const sparse = { ...opts, blocks };
      time('sparse_wg', () => attentionPrefillWg(gpu.ctx, o, q, k, v, meta, sparse));
      const sw = gpu.readF32(o);
      time('sparse_ws', () =>
        attentionPrefillWg(gpu.ctx, o, q, k, v, meta, sparse, { loaderWarp }),
      );
      row['rel_sparse_ws_wg'] = relErr(gpu.readF32(o), sw);
      gpu.free(blocks);
    }
  }
  for (const t of [q, k, v, o]) gpu.free(t);
  return row;
}
