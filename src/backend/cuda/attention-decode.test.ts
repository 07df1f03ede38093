import { describe, expect, it } from 'vitest';
import {
  decodeAttentionFits,
  KEYS_PER_TILE,
  MAX_SPLITS,
  MAX_TILES,
  splitsFor,
} from './attention-decode.js';

const M3 = { numHeads: 64, numKvHeads: 4, headDim: 128, scale: 1, blocks: null };

describe('tensor-core decode attention: routing and split-KV sizing', () => {
  it('takes bf16 GQA groups of at most 16 heads with a head_dim multiple of 16 up to 128', () => {
    expect(decodeAttentionFits('bf16', M3)).toBe(true);
    expect(decodeAttentionFits('f32', M3)).toBe(false);
    expect(decodeAttentionFits('bf16', { ...M3, numKvHeads: 2 })).toBe(false); // 32 heads per group
    expect(decodeAttentionFits('bf16', { ...M3, headDim: 256 })).toBe(false);
    expect(decodeAttentionFits('bf16', { ...M3, headDim: 72 })).toBe(false);
    expect(decodeAttentionFits('bf16', { ...M3, numHeads: 6, numKvHeads: 4 })).toBe(false);
  });

  it('splits the keys of small batches to fill the GPU, never past MAX_SPLITS', () => {
    expect(splitsFor(132, 1, 4, 0, 128)).toBe(MAX_SPLITS); // 396 blocks wanted for 4
    expect(splitsFor(132, 8, 4, 0, 128)).toBe(12);
    expect(splitsFor(132, 64, 4, 0, 128)).toBe(1);
    expect(splitsFor(132, 4096, 4, 0, 128)).toBe(1);
  });

  it('never gives a sparse block more selected tiles than its list holds, nor splits past top-k', () => {
    for (const [topk, S] of [
      [16, 128],
      [4, 16],
      [64, 1024],
      [256, 128],
    ] as const) {
      for (const T of [1, 8, 64, 2048]) {
        const z = splitsFor(132, T, 4, topk, S);
        expect(z).toBeGreaterThanOrEqual(1);
        expect(Math.ceil(topk / z) * Math.ceil(S / KEYS_PER_TILE)).toBeLessThanOrEqual(MAX_TILES);
        if (Math.ceil(S / KEYS_PER_TILE) <= MAX_TILES) expect(z).toBeLessThanOrEqual(topk);
      }
    }
  });
});
