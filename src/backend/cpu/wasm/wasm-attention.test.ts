import { describe, expect, it } from 'vitest';
import type { MsaOptions } from '../../backend.js';
import { layoutBatch, type ForwardBatch } from '../../forward-batch.js';
import { pagedAttention, type PagedAttentionArgs } from '../ops/attention.js';
import { msaSelectBlocks } from '../ops/msa-select.js';
import { CpuKernels } from './cpu-kernels.js';
import { fusedMultiplyAdd } from './fused-multiply-add.js';
import { batchOf, filled } from './test-helpers.js';

/** Both kernel variants where the runtime fuses multiply-add (CpuKernelsOptions.fma). */
const FMA_MODES = fusedMultiplyAdd() ? [false, true] : [false];

const H = 4;
const Hkv = 2;
const Dh = 16;
const S = 4;
const P = 64;

function attentionCase(k: CpuKernels, seqs: [number, number][], topk: number) {
  const batch = batchOf(seqs, S, P);
  const layout = layoutBatch(batch);
  const T = layout.numTokens;
  let blocks: Int32Array | null = null;
  if (topk > 0) {
    blocks = k.heap.i32(Hkv * T * topk);
    blocks.fill(-1);
    for (let g = 0; g < Hkv; g++)
      for (let t = 0; t < T; t++) {
        const nb = Math.floor(layout.positions[t]! / S) + 1;
        // a descending, partly-filled list: the kernel must sort it and skip −1
        for (let i = 0; i < Math.min(topk, nb); i++)
          blocks[(g * T + t) * topk + i] = nb - 1 - ((i * (g + 2)) % nb);
        const seen = new Set<number>();
        for (let i = 0; i < topk; i++) {
          const at = (g * T + t) * topk + i;
          if (seen.has(blocks[at]!)) blocks[at] = -1;
          seen.add(blocks[at]!);
        }
      }
  }
  const args = (out: Float32Array): PagedAttentionArgs => ({
    out,
    q: filled(k, T * H * Dh, 1),
    k: filled(k, P * S * Hkv * Dh, 2),
    v: filled(k, P * S * Hkv * Dh, 3),
    numHeads: H,
    numKvHeads: Hkv,
    headDim: Dh,
    scale: 0.7,
    blocks,
    topk,
  });
  return { batch, layout, args, T };
}

describe.each(FMA_MODES)('WASM SIMD paged attention (fma %s)', (fma) => {
  it.each([
    ['dense, prefill + decode mix', 0],
    ['MSA blocks', 3],
  ])('matches the float64 JS kernel (%s)', (_name, topk) => {
    const k = new CpuKernels({ fma });
    const c = attentionCase(
      k,
      [
        [0, 9],
        [13, 1],
        [30, 3],
        [4, 1],
      ],
      topk,
    );
    const got = k.heap.f32(c.T * H * Dh);
    const ref = new Float32Array(c.T * H * Dh);
    const a = c.args(got);
    k.attention(a, c.batch, c.layout);
    pagedAttention({ ...a, out: ref }, c.batch, c.layout);
    for (let i = 0; i < ref.length; i++) expect(Math.abs(got[i]! - ref[i]!)).toBeLessThan(2e-6);
  });

  it('gives a token the same bits alone as in a batch', () => {
    const k = new CpuKernels({ fma });
    const c = attentionCase(
      k,
      [
        [0, 7],
        [21, 1],
      ],
      0,
    );
    const all = k.heap.f32(c.T * H * Dh);
    const a = c.args(all);
    k.attention(a, c.batch, c.layout);
    // the decode token alone: same cache, same page table
    const one: ForwardBatch = { ...c.batch, tokenIds: new Int32Array(1), seqs: [c.batch.seqs[1]!] };
    const out1 = k.heap.f32(H * Dh);
    const q1 = k.heap.f32(H * Dh);
    q1.set(a.q.subarray(7 * H * Dh, 8 * H * Dh));
    k.attention({ ...a, out: out1, q: q1 }, one, layoutBatch(one));
    expect(Array.from(out1)).toEqual(Array.from(all.subarray(7 * H * Dh, 8 * H * Dh)));
  });
  it.each([
    ['dense', 0],
    ['MSA blocks', 3],
  ])(
    'GQA pairs (H = 2·Hkv, one pass over K and V) give one head at a time bit for bit (%s)',
    (_n, topk) => {
      const k = new CpuKernels({ fma });
      // prettier-ignore
      const c = attentionCase(k, [[0, 9], [13, 1], [30, 3]], topk);
      const a = c.args(k.heap.f32(c.T * H * Dh));
      k.attention(a, c.batch, c.layout);
      // the same heads with group size 1: KV group h is a copy of group ⌊h/2⌋, blocks likewise
      const widen = (src: Float32Array): Float32Array => {
        const dst = k.heap.f32(P * S * H * Dh);
        for (let r = 0; r < P * S; r++)
          for (let h = 0; h < H; h++)
            dst.set(
              src.subarray((r * Hkv + (h >> 1)) * Dh, (r * Hkv + (h >> 1) + 1) * Dh),
              (r * H + h) * Dh,
            );
        return dst;
      };
      let blocks: Int32Array | null = null;
      if (a.blocks) {
        blocks = k.heap.i32(H * c.T * topk);
        for (let h = 0; h < H; h++)
          blocks.set(
            a.blocks.subarray((h >> 1) * c.T * topk, ((h >> 1) + 1) * c.T * topk),
            h * c.T * topk,
          );
      }
      const one = k.heap.f32(c.T * H * Dh);
      // prettier-ignore
      k.attention({ ...a, out: one, k: widen(a.k), v: widen(a.v), numKvHeads: H, blocks }, c.batch, c.layout);
      expect(Array.from(a.out)).toEqual(Array.from(one));
    },
  );

  // Units of every KV group of a token (dense, tokens >= chunks) or of one, rows touched
  // first or not: only loads and the order of units change, never a result bit.
  it.each([
    ['dense', 0],
    ['MSA blocks', 3],
  ])('gives the same bits with and without touching, on 1, 2 and 4 threads (%s)', (_n, topk) => {
    const ref = new CpuKernels({ fma, attentionTouchMinBytes: Infinity });
    // prettier-ignore
    const c = attentionCase(ref, [[0, 9], [13, 1], [30, 3], [4, 1], [50, 1]], topk);
    const a = c.args(ref.heap.f32(c.T * H * Dh));
    ref.attention(a, c.batch, c.layout);
    const want = Array.from(a.out);
    // 4 threads: 16 chunks for 15 tokens, so dense units are (token, group) again
    for (const threads of [1, 2, 4]) {
      const k = new CpuKernels({ fma, threads, minParallelFlops: 0, attentionTouchMinBytes: 0 });
      // prettier-ignore
      const d = attentionCase(k, [[0, 9], [13, 1], [30, 3], [4, 1], [50, 1]], topk);
      const b = d.args(k.heap.f32(d.T * H * Dh));
      k.attention(b, d.batch, d.layout);
      expect(Array.from(b.out)).toEqual(want);
      k.close();
    }
  });
});

describe.each(FMA_MODES)('WASM MSA block selection (fma %s)', (fma) => {
  it('selects the same blocks as the float64 JS kernel', () => {
    const k = new CpuKernels({ fma });
    const Hi = 2;
    const Di = 16;
    const o: MsaOptions = {
      numIndexHeads: Hi,
      indexDim: Di,
      topk: 3,
      initBlocks: 1,
      localBlocks: 1,
    };
    const batch = batchOf(
      [
        [0, 23],
        [40, 1],
        [6, 2],
        [1, 1],
      ],
      S,
      P,
    );
    const layout = layoutBatch(batch);
    const T = layout.numTokens;
    const idxQ = filled(k, T * Hi * Di, 5);
    const idxK = filled(k, P * S * Di, 6);
    const got = k.heap.i32(Hi * T * o.topk);
    const ref = new Int32Array(Hi * T * o.topk);
    k.msaSelect(got, idxQ, idxK, batch, layout, o);
    msaSelectBlocks(ref, idxQ, idxK, batch, layout, o);
    expect(Array.from(got)).toEqual(Array.from(ref));
    expect(Array.from(got).filter((b) => b > 1).length).toBeGreaterThan(T); // real choices made
  });
});

describe.each(FMA_MODES)('WASM MSA selection split by key ranges (fma %s)', (fma) => {
  // Decode-like steps (fewer tokens than chunks) over up to 100 blocks: with 2 threads and
  // every kernel split, scoring runs as msa_scores units of 16 blocks, then msa_pick.
  it.each([2, 3])('%d index heads: the same blocks as one thread and the JS kernel', (Hi) => {
    const k1 = new CpuKernels({ fma });
    const k2 = new CpuKernels({ fma, threads: 2, minParallelFlops: 0 });
    const Di = 8;
    const o: MsaOptions = {
      numIndexHeads: Hi,
      indexDim: Di,
      topk: 5,
      initBlocks: 1,
      localBlocks: 2,
    };
    const pages = 256;
    const batch = batchOf([[398, 1], [70, 1], [9, 1]], S, pages); // prettier-ignore
    const layout = layoutBatch(batch);
    const T = layout.numTokens;
    const ref = new Int32Array(Hi * T * o.topk);
    const outs = [k1, k2].map((k) => {
      const idxQ = filled(k, T * Hi * Di, 8);
      const idxK = filled(k, pages * S * Di, 9);
      const got = k.heap.i32(Hi * T * o.topk);
      k.msaSelect(got, idxQ, idxK, batch, layout, o);
      if (k === k1) msaSelectBlocks(ref, idxQ, idxK, batch, layout, o);
      return Array.from(got);
    });
    k2.close();
    expect(outs[0]).toEqual(Array.from(ref));
    expect(outs[1]).toEqual(Array.from(ref));
    expect(outs[0]!.filter((b) => b > 20).length).toBeGreaterThan(Hi); // choices beyond the first part
  });
});
