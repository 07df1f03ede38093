/**
 * MSA block selections of a GPU forward against the CPU's, tie-aware (the group check's
 * reference, forced-routes.ts). A (index head, token) row whose non-forced blocks differ is a
 * near-tie when, on the CPU's scores, the CPU's worst pick beats the GPU's worst pick by no
 * more than twice the largest difference between the two backends' scores of the blocks
 * involved (each side's boundary score may move by that much): the scores are recomputed on the
 * host from each backend's own index query and keys (recorded on the GPU by
 * record-selections.ts), as msa-model-check does. Near-tied rows get the GPU's blocks on the
 * CPU; others are left and counted.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MsaOptions } from '../../src/backend/backend.js';
import type { ModelConfig } from '../../src/config/model-config.js';
import { kvHeadRange } from '../../src/parallel/parallel-layout.js';

/** One msaSelect call of one rank (its local index heads). */
export interface MsaRecord {
  /** The call's index within the forward (0 = the first MSA layer). */
  readonly call: number;
  readonly T: number;
  readonly heads: number;
  readonly dim: number;
  readonly topk: number;
  /** [heads, T, topk] i32, base64. */
  readonly ids: string;
  /** idxQ [T, heads·dim] f32, base64. */
  readonly q: string;
  /** The index-key cache [P·S, dim] f32 after the call, base64 (pages in order: one sequence). */
  readonly k: string;
}

export const RECORD_ENV = 'MOESERVE_RECORD_MSA';

/** One index head's selections of one MSA call on the GPU, with its inputs. */
export interface HeadSelection {
  readonly ids: Int32Array; // [T, topk]
  readonly q: Float32Array; // [T, dim]
  readonly k: Float32Array; // [P·S, dim]
}

/** GPU selections by MSA call (layer order), then global index head. */
export type GpuSelections = HeadSelection[][];

export interface BlockFlip {
  readonly call: number;
  readonly head: number;
  readonly token: number;
  readonly gap: number;
  readonly err: number;
  readonly forced: boolean;
}

const f32 = (s: string): Float32Array => {
  const b = Buffer.from(s, 'base64');
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
};
const i32 = (s: string): Int32Array => {
  const b = Buffer.from(s, 'base64');
  return new Int32Array(b.buffer, b.byteOffset, b.byteLength / 4);
};

/** DIR/rank<r>.jsonl of a tp-rank group as selections per call and global head. */
export function readGpuSelections(dir: string, cfg: ModelConfig): GpuSelections {
  const files = readdirSync(dir).filter((f) => /^rank\d+\.jsonl$/.test(f));
  const tp = files.length;
  const out: GpuSelections = [];
  for (let r = 0; r < tp; r++) {
    const [h0] = kvHeadRange(cfg, { tpRank: r, tpSize: tp });
    const lines = readFileSync(join(dir, `rank${r}.jsonl`), 'utf8')
      .trim()
      .split('\n');
    for (const line of lines) {
      const rec = JSON.parse(line) as MsaRecord;
      const ids = i32(rec.ids);
      const q = f32(rec.q);
      const k = f32(rec.k);
      const perCall = (out[rec.call] ??= []);
      for (let h = 0; h < rec.heads; h++) {
        if (perCall[h0 + h]) continue; // a replicated head: its first rank's copy
        const qh = new Float32Array(rec.T * rec.dim);
        for (let t = 0; t < rec.T; t++)
          qh.set(
            q.subarray((t * rec.heads + h) * rec.dim, (t * rec.heads + h + 1) * rec.dim),
            t * rec.dim,
          );
        perCall[h0 + h] = {
          ids: ids.slice(h * rec.T * rec.topk, (h + 1) * rec.T * rec.topk),
          q: qh,
          k,
        };
      }
    }
  }
  return out;
}

/** Block score of `msaSelectBlocks` (max over the block's keys up to pos), in float64. */
function blockScore(
  q: Float32Array,
  qOff: number,
  k: Float32Array,
  b: number,
  pos: number,
  S: number,
  D: number,
): number {
  let best = -Infinity;
  for (let j = b * S; j <= Math.min(pos, b * S + S - 1); j++) {
    let s = 0;
    for (let d = 0; d < D; d++) s += q[qOff + d]! * k[j * D + d]!;
    best = Math.max(best, s);
  }
  return best;
}

/**
 * Compares the CPU's selections `cpu` [Hi, T, topk] of one call (its inputs q [T, Hi·D] and
 * the key cache k, one sequence at positions 0..T-1 in page order) with the GPU's, rewriting
 * near-tied rows to the GPU's blocks; returns every differing row.
 */
export function forceBlocks(
  cpu: Int32Array,
  q: Float32Array,
  k: Float32Array,
  gpu: readonly HeadSelection[],
  o: MsaOptions,
  S: number,
  call: number,
): BlockFlip[] {
  const { numIndexHeads: Hi, indexDim: D, topk } = o;
  const T = q.length / (Hi * D);
  const flips: BlockFlip[] = [];
  for (let h = 0; h < Hi; h++) {
    const g = gpu[h];
    if (!g)
      throw new Error(`forced blocks: no GPU selection of index head ${h} at MSA call ${call}`);
    for (let t = 0; t < T; t++) {
      const c = Array.from(cpu.subarray((h * T + t) * topk, (h * T + t + 1) * topk));
      const w = Array.from(g.ids.subarray(t * topk, (t + 1) * topk));
      if (c.join() === w.join()) continue;
      const numBlocks = Math.floor(t / S) + 1;
      const free = (b: number): boolean =>
        b >= 0 && b >= o.initBlocks && b < numBlocks - o.localBlocks;
      const cs = (b: number): number => blockScore(q, (t * Hi + h) * D, k, b, t, S, D);
      const gs = (b: number): number => blockScore(g.q, t * D, g.k, b, t, S, D);
      const cFree = c.filter(free);
      const wFree = w.filter(free);
      const involved = [...new Set([...cFree, ...wFree])];
      const err = Math.max(0, ...involved.map((b) => Math.abs(gs(b) - cs(b))));
      const gap = Math.min(...cFree.map(cs)) - Math.min(...wFree.map(cs));
      const sameForced = c.filter((b) => !free(b)).join() === w.filter((b) => !free(b)).join();
      const forced = sameForced && cFree.length === wFree.length && gap <= 2 * err;
      flips.push({ call, head: h, token: t, gap, err, forced });
      if (forced) cpu.set(w, (h * T + t) * topk);
    }
  }
  return flips;
}
