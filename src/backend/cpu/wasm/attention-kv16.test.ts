import { describe, expect, it } from 'vitest';
import { layoutBatch, type ForwardBatch } from '../../forward-batch.js';
import type { MsaOptions } from '../../backend.js';
import type { PagedAttentionArgs } from '../ops/attention.js';
import { CpuKernels } from './cpu-kernels.js';
import { fusedMultiplyAdd } from './fused-multiply-add.js';
import { batchOf, filled } from './test-helpers.js';

const FMA_MODES = fusedMultiplyAdd() ? [false, true] : [false];
const S = 4;
const P = 48;
const Dh = 16;

/** filled()'s values truncated to bf16 (any bf16 will do), with their bits. */
function bf16Filled(k: CpuKernels, n: number, seed: number): [Float32Array, Uint16Array] {
  const f = filled(k, n, seed);
  const h = k.heap.u16(n);
  const bits = new Uint32Array(f.buffer, f.byteOffset, n);
  for (let i = 0; i < n; i++) {
    h[i] = bits[i]! >>> 16;
    bits[i] = h[i]! << 16;
  }
  return [f, h];
}

// prefill, decode and a longer decode; page tables shuffled
const SEQS: [number, number][] = [
  [0, 9],
  [13, 1],
  [41, 1],
  [30, 3],
];

/** Blocks of MSA attention: each token's last block and up to topk − 1 before it. */
function blocksOf(k: CpuKernels, positions: Int32Array, Hkv: number, topk: number): Int32Array {
  const T = positions.length;
  const b = k.heap.i32(Hkv * T * topk);
  b.fill(-1);
  for (let g = 0; g < Hkv; g++)
    for (let t = 0; t < T; t++) {
      const nb = Math.floor(positions[t]! / S) + 1;
      for (let i = 0; i < Math.min(topk, nb); i++) b[(g * T + t) * topk + i] = nb - 1 - i * (g + 1);
      for (let i = 0; i < topk; i++)
        if (b[(g * T + t) * topk + i]! < 0) b[(g * T + t) * topk + i] = -1;
    }
  return b;
}

describe.each(FMA_MODES)('attention over bf16 K/V copies (attention_kv16, fma %s)', (fma) => {
  it.each([
    [4, 2, 0, 1, 0],
    [4, 2, 3, 2, 0],
    [2, 2, 0, 2, Infinity],
    [2, 2, 3, 1, 0],
    [4, 2, 0, 2, Infinity],
  ])(
    'H %i, Hkv %i, topk %i, %i threads, touch from %s bytes: the f32 kernel bit for bit',
    (H, Hkv, topk, threads, touchFrom) => {
      const k = new CpuKernels({
        fma,
        threads,
        minParallelFlops: 0,
        attentionTouchMinBytes: touchFrom,
      });
      const batch = batchOf(SEQS, S, P);
      const layout = layoutBatch(batch);
      const T = layout.numTokens;
      const [kf, kh] = bf16Filled(k, P * S * Hkv * Dh, 2);
      const [vf, vh] = bf16Filled(k, P * S * Hkv * Dh, 3);
      const a: PagedAttentionArgs = {
        out: k.heap.f32(T * H * Dh),
        q: bf16Filled(k, T * H * Dh, 1)[0],
        k: kf,
        v: vf,
        numHeads: H,
        numKvHeads: Hkv,
        headDim: Dh,
        scale: 0.7,
        blocks: topk > 0 ? blocksOf(k, layout.positions, Hkv, topk) : null,
        topk,
      };
      const half = k.heap.f32(T * H * Dh);
      k.attention(a, batch, layout);
      k.attention({ ...a, out: half }, batch, layout, { k: kh, v: vh });
      expect(a.out.some((x) => x !== 0)).toBe(true);
      expect(Array.from(half)).toEqual(Array.from(a.out));
      k.close();
    },
  );
});

describe.each(FMA_MODES)('MSA selection over bf16 index keys (msa_*_kv16, fma %s)', (fma) => {
  // one thread: msa_select per token; two with every kernel split: decode tokens scored in
  // 16-block ranges (msa_scores_kv16) then msa_pick
  it.each([
    [2, 1],
    [3, 1],
    [2, 2],
    [3, 2],
  ])('%i index heads, %i threads: the blocks of the f32 keys', (Hi, threads) => {
    const k = new CpuKernels({ fma, threads, minParallelFlops: 0 });
    const Di = 8;
    const pages = 256;
    const o: MsaOptions = {
      numIndexHeads: Hi,
      indexDim: Di,
      topk: 5,
      initBlocks: 1,
      localBlocks: 2,
    };
    const batch: ForwardBatch = {
      tokenIds: new Int32Array(threads === 1 ? 26 : 3),
      seqs: (threads === 1
        ? [
            [0, 23],
            [398, 1],
            [70, 1],
            [9, 1],
          ]
        : [
            [398, 1],
            [70, 1],
            [9, 1],
          ]
      ).map(([numCached, numNew], s) => ({
        numCached: numCached!,
        numNew: numNew!,
        pageTable: Int32Array.from({ length: 100 }, (_, i) => (s * 100 + i * 3) % pages),
      })),
      pageSize: S,
      logitsFor: 'last',
    };
    const layout = layoutBatch(batch);
    const T = layout.numTokens;
    const idxQ = bf16Filled(k, T * Hi * Di, 8)[0];
    const [kf, kh] = bf16Filled(k, pages * S * Di, 9);
    const [want, got] = [k.heap.i32(Hi * T * o.topk), k.heap.i32(Hi * T * o.topk)];
    k.msaSelect(want, idxQ, kf, batch, layout, o);
    k.msaSelect(got, idxQ, kf, batch, layout, o, kh);
    expect(Array.from(got)).toEqual(Array.from(want));
    expect(Array.from(got).filter((b) => b > 20).length).toBeGreaterThan(Hi); // real choices
    k.close();
  });
});
