import type { BatchLayout, ForwardBatch } from '../../forward-batch.js';
import type { MsaOptions } from '../../backend.js';
import { dot } from './matmul.js';

/**
 * MSA block selection (vLLM convention, shared/golden/README.md): for query token t at
 * position p and index head h, candidate blocks are 0..⌊p/S⌋. Block score = max over keys
 * j ≤ p in the block of ⟨idxQ[t,h], idxK[j]⟩. The first `initBlocks` and the last
 * `localBlocks` candidates are always kept; the remaining slots go to the best-scoring other
 * blocks (ties to the lower index). out [Hidx, T, topk], unused slots −1.
 */
export function msaSelectBlocks(
  out: Int32Array,
  idxQ: Float32Array,
  idxK: Float32Array,
  batch: ForwardBatch,
  layout: BatchLayout,
  o: MsaOptions,
): void {
  const S = batch.pageSize;
  const T = layout.numTokens;
  const { numIndexHeads: Hi, indexDim: Di, topk } = o;
  out.fill(-1);
  for (let t = 0; t < T; t++) {
    const seq = batch.seqs[layout.seqOfToken[t]!]!;
    const pos = layout.positions[t]!;
    const numBlocks = Math.floor(pos / S) + 1;
    for (let h = 0; h < Hi; h++) {
      const dst = (h * T + t) * topk;
      if (numBlocks <= topk) {
        for (let b = 0; b < numBlocks; b++) out[dst + b] = b;
        continue;
      }
      const qOff = (t * Hi + h) * Di;
      const forced = (b: number): boolean => b < o.initBlocks || b >= numBlocks - o.localBlocks;
      const chosen: number[] = [];
      const ranked: { b: number; s: number }[] = [];
      for (let b = 0; b < numBlocks; b++) {
        if (forced(b)) {
          chosen.push(b);
          continue;
        }
        let best = -Infinity;
        const end = Math.min(pos, b * S + S - 1);
        for (let j = b * S; j <= end; j++) {
          const slot = seq.pageTable[b]! * S + (j % S);
          const s = dot(idxQ, qOff, idxK, slot * Di, Di);
          if (s > best) best = s;
        }
        ranked.push({ b, s: best });
      }
      ranked.sort((x, y) => y.s - x.s || x.b - y.b);
      for (const r of ranked) {
        if (chosen.length >= topk) break;
        chosen.push(r.b);
      }
      chosen.sort((x, y) => x - y).forEach((b, i) => (out[dst + i] = b));
    }
  }
}
