/**
 * `node --import <this module> moeserve forward ...` with MOESERVE_RECORD_MSA=DIR: every rank
 * (the launcher and its workers inherit the --import) appends, after each CUDA msaSelect of a
 * forward, the selected blocks and the index inputs they were chosen from to DIR/rank<r>.jsonl
 * (forced-choices.ts reads them to tell near-tied selections from wrong ones). Nothing is
 * patched without the variable. A test seam of the GPU checks, never loaded by the engine.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Backend, BatchMeta, MsaOptions } from '../../src/backend/backend.js';
import { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import type { ForwardBatch } from '../../src/backend/forward-batch.js';
import { MiniMaxM3Model } from '../../src/model/minimax-m3/minimax-m3-model.js';
import type { KvCache } from '../../src/model/minimax-m3/kv-cache.js';
import type { Tensor } from '../../src/tensor/tensor.js';
import { RECORD_ENV, type MsaRecord } from './forced-blocks.js';

const b64 = (a: Float32Array | Int32Array): string =>
  Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('base64');

function install(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const rankOf = new WeakMap<Backend, number>();
  const calls = new WeakMap<Backend, number>();
  const forward = MiniMaxM3Model.prototype.forward;
  MiniMaxM3Model.prototype.forward = function (this: MiniMaxM3Model, b: ForwardBatch, kv: KvCache) {
    const self = this as unknown as { backend: Backend; comm: { rank: number } };
    rankOf.set(self.backend, self.comm.rank);
    calls.set(self.backend, 0);
    return forward.call(this, b, kv);
  };
  const select = CudaBackend.prototype.msaSelect;
  CudaBackend.prototype.msaSelect = function (
    this: CudaBackend,
    out: Tensor,
    idxQ: Tensor,
    idxK: Tensor,
    meta: BatchMeta,
    o: MsaOptions,
  ) {
    select.call(this, out, idxQ, idxK, meta, o);
    const rank = rankOf.get(this);
    if (rank === undefined) return;
    const call = calls.get(this) ?? 0;
    calls.set(this, call + 1);
    const rec: MsaRecord = {
      call,
      T: meta.numTokens,
      heads: o.numIndexHeads,
      dim: o.indexDim,
      topk: o.topk,
      ids: b64(this.readI32(out)),
      q: b64(this.readF32(idxQ)),
      k: b64(this.readF32(idxK)),
    };
    appendFileSync(join(dir, `rank${rank}.jsonl`), JSON.stringify(rec) + '\n');
  };
}

const dir = process.env[RECORD_ENV];
if (dir) install(dir);
