import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { assembleWat } from '../../../../scripts/assemble-wat.mjs';
import { layoutBatch, type ForwardBatch } from '../../forward-batch.js';
import { writeCacheRows } from '../ops/attention.js';
import { swigluOaiRows } from '../ops/moe.js';
import { addRmsNormRows, rmsNormRows } from '../ops/norm.js';
import { CpuKernels } from './cpu-kernels.js';
import { ROWOPS_WASM_BASE64 } from './kernels-wasm.js';

/** Heap array of deterministic values in [−scale, scale). */
function filled(k: CpuKernels, n: number, seed: number, scale = 1): Float32Array {
  const a = k.heap.f32(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    a[i] = (2 * (s / 2 ** 31) - 1) * scale;
  }
  return a;
}

function expectClose(got: Float32Array, want: Float32Array, rel: number): void {
  expect(got.length).toBe(want.length);
  let worst = 0;
  for (let i = 0; i < got.length; i++)
    worst = Math.max(worst, Math.abs(got[i]! - want[i]!) / (Math.abs(want[i]!) + 1e-3));
  expect(worst).toBeLessThan(rel);
}

/** Runs `f` on fresh kernels at 1, 2 and 3 threads (every op split) and returns the outputs. */
function atThreads(f: (k: CpuKernels) => Float32Array): Float32Array[] {
  return [1, 2, 3].map((threads) => {
    const k = new CpuKernels({ threads, minParallelFlops: 0 });
    const out = f(k).slice();
    k.close();
    return out;
  });
}

describe('row kernels (rowops.wat)', () => {
  it('embeds exactly the bytes rowops.wat assembles to (run scripts/build-wasm.mjs after editing)', async () => {
    const wat = readFileSync(new URL('./rowops.wat', import.meta.url), 'utf8');
    expect(Buffer.from(await assembleWat(wat)).toString('base64')).toBe(ROWOPS_WASM_BASE64);
  });

  it('RMSNorm (in place too) matches the float64 kernel, the same bits at 1-3 threads', () => {
    const [rows, n] = [37, 64];
    const outs = atThreads((k) => {
      const x = filled(k, rows * n, 1, 3);
      const w = filled(k, n, 2, 0.5);
      const want = new Float32Array(rows * n);
      rmsNormRows(want, x, w, 1e-6);
      const out = k.heap.f32(rows * n);
      k.rmsNorm(out, x, w, 1e-6);
      expectClose(out, want, 2e-6);
      k.rmsNorm(x, x, w, 1e-6); // in place, as the q/k norms run
      expect(Array.from(x)).toEqual(Array.from(out));
      return out;
    });
    expect(Array.from(outs[1]!)).toEqual(Array.from(outs[0]!));
    expect(Array.from(outs[2]!)).toEqual(Array.from(outs[0]!));
  });

  it('residual add + RMSNorm matches the float64 kernel (residual updated), the same bits at 1-3 threads', () => {
    const [rows, n] = [19, 256];
    const outs = atThreads((k) => {
      const r = filled(k, rows * n, 3);
      const x = filled(k, rows * n, 4);
      const w = filled(k, n, 5, 0.5);
      const [r2, want] = [r.slice(), new Float32Array(rows * n)];
      addRmsNormRows(want, r2, x, w, 1e-6);
      const out = k.heap.f32(rows * n);
      k.addRmsNorm(out, r, x, w, 1e-6);
      expect(Array.from(r)).toEqual(Array.from(r2)); // float32 sums either way
      expectClose(out, want, 2e-6);
      return out;
    });
    expect(Array.from(outs[1]!)).toEqual(Array.from(outs[0]!));
    expect(Array.from(outs[2]!)).toEqual(Array.from(outs[0]!));
  });

  it('SwiGLU-OAI matches the float64 kernel across the clamp and deep negative gates, the same bits at 1-3 threads', () => {
    const [M, I] = [23, 64];
    const outs = atThreads((k) => {
      const gu = filled(k, M * 2 * I, 6, 12); // beyond the limit 7 both ways
      gu[0] = -200; // e^(α·200) would overflow a naive sigmoid
      gu[1] = 7;
      const want = new Float32Array(M * I);
      swigluOaiRows(want, gu, I, 1.702, 7);
      const out = k.heap.f32(M * I);
      k.swiglu(out, gu, I, 1.702, 7);
      expectClose(out, want, 1e-5);
      expect(Number.isFinite(out[0]!)).toBe(true);
      return out;
    });
    expect(Array.from(outs[1]!)).toEqual(Array.from(outs[0]!));
    expect(Array.from(outs[2]!)).toEqual(Array.from(outs[0]!));
  });

  it('add: out = a + b exactly (float32 sums), in place too', () => {
    const k = new CpuKernels({ threads: 2, minParallelFlops: 0 });
    const [a, b] = [filled(k, 40 * 8, 7), filled(k, 40 * 8, 8)];
    const want = a.map((v, i) => v + b[i]!);
    k.add(a, a, b, 8);
    k.close();
    expect(Array.from(a)).toEqual(Array.from(want));
  });

  it('MoE gather and weighted scatter-add: the JS reference bit for bit (float64 updates, entry order)', () => {
    const [T, D, R] = [9, 24, 20];
    const k = new CpuKernels({ threads: 2, minParallelFlops: 0 });
    const x = filled(k, T * D, 9);
    const y = filled(k, R * D, 10, 3);
    const w = filled(k, R, 11);
    const rows = k.heap.i32(R);
    for (let i = 0; i < R; i++) rows[i] = (i * 5) % T; // tokens repeat: updates of one row chain
    const xs = k.heap.f32(R * D);
    k.gatherRows(xs, x, rows, D);
    const out = filled(k, T * D, 12);
    const want = out.slice();
    rows.forEach((r, i) => {
      expect(Array.from(xs.subarray(i * D, i * D + D))).toEqual(
        Array.from(x.subarray(r * D, r * D + D)),
      );
      for (let d = 0; d < D; d++) want[r * D + d] = want[r * D + d]! + w[i]! * y[i * D + d]!;
    });
    k.scatterAdd(out, y, rows, w, D);
    k.close();
    expect(Array.from(out)).toEqual(Array.from(want));
  });

  it('KV cache write: rows land at their slots exactly as writeCacheRows puts them', () => {
    const [S, W] = [4, 12];
    const batch: ForwardBatch = {
      tokenIds: new Int32Array(5),
      seqs: [
        { numCached: 2, numNew: 3, pageTable: Int32Array.from([3, 1]) },
        { numCached: 6, numNew: 2, pageTable: Int32Array.from([0, 2]) },
      ],
      pageSize: S,
      logitsFor: 'last',
    };
    const layout = layoutBatch(batch);
    const k = new CpuKernels();
    const x = filled(k, layout.numTokens * W, 13);
    const cache = filled(k, 4 * S * W, 14);
    const want = cache.slice();
    writeCacheRows(want, x, layout.slots, W);
    k.writeCache(cache, x, batch, layout, W);
    k.close();
    expect(Array.from(cache)).toEqual(Array.from(want));
  });

  it('zero: a heap block set to 0 and nothing beside it; arrays outside the heap too', () => {
    const k = new CpuKernels();
    const a = filled(k, 300, 15);
    const before = a.slice();
    k.zero(a.subarray(7, 263));
    k.zero(new Int32Array(a.buffer, a.byteOffset + 4 * 280, 3));
    const plain = Float32Array.from([1, 2, 3]);
    k.zero(plain);
    k.close();
    const want = before.slice();
    want.fill(0, 7, 263);
    want.fill(0, 280, 283);
    expect(Array.from(a)).toEqual(Array.from(want));
    expect(Array.from(plain)).toEqual([0, 0, 0]);
  });
});
