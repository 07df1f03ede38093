import { describe, expect, it } from 'vitest';
import type { ExpertWeights, MoeOptions } from '../../backend.js';
import { packPanels, PackedPanels } from '../packed-panels.js';
import { CpuKernels } from '../wasm/cpu-kernels.js';
import { moeRows, type SharedExpertRows } from './moe.js';

const [T, D, I, E, K] = [13, 32, 16, 5, 2];
const opts: MoeOptions = { alpha: 1.702, limit: 7 };

function values(n: number, seed: number): Float32Array {
  const a = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    a[i] = 2 * (s / 2 ** 31) - 1;
  }
  return a;
}

/** Routes: token t takes experts (t + j·2) mod E; expert 4 gets no token; one slot is remote. */
function routes(): { ids: Int32Array; weights: Float32Array } {
  const ids = Int32Array.from({ length: T * K }, (_, r) => ((r >> 1) + 2 * (r & 1)) % 4);
  ids[3] = 9; // outside this rank's experts: skipped
  return { ids, weights: values(T * K, 3) };
}

/** One expert at a time: k.matmul, k.swiglu, then the float64 weighted add (the old path). */
function reference(
  k: CpuKernels,
  x: Float32Array,
  gu: PackedPanels,
  dn: PackedPanels,
): Float32Array {
  const { ids, weights } = routes();
  const out = new Float32Array(T * D);
  for (let e = 0; e < E; e++) {
    const entries = [...ids.keys()].filter((r) => ids[r] === e);
    if (entries.length === 0) continue;
    const n = entries.length;
    const xs = k.heap.f32(n * D);
    entries.forEach((r, i) => xs.set(x.subarray((r >> 1) * D, (r >> 1) * D + D), i * D));
    const g = k.heap.f32(n * 2 * I);
    k.matmul(g, xs, gu.subarray(e * 2 * I * D, (e + 1) * 2 * I * D), n, 2 * I, D);
    const act = k.heap.f32(n * I);
    k.swiglu(act, g, I, opts.alpha, opts.limit);
    const y = k.heap.f32(n * D);
    k.matmul(y, act, dn.subarray(e * D * I, (e + 1) * D * I), n, D, I);
    entries.forEach((r, i) => {
      for (let d = 0; d < D; d++)
        out[(r >> 1) * D + d] = out[(r >> 1) * D + d]! + weights[r]! * y[i * D + d]!;
    });
  }
  return out;
}

describe('moeRows (experts grouped into one job per matmul)', () => {
  it('equals one expert at a time bit for bit, at 1, 2 and 3 threads', () => {
    const outs = [1, 2, 3].map((threads) => {
      const k = new CpuKernels({ threads, minParallelFlops: 0 });
      const x = k.heap.f32(T * D);
      x.set(values(T * D, 1));
      const pack = (n: number, kk: number, seed: number): PackedPanels =>
        new PackedPanels(packPanels(values(E * n * kk, seed), k.heap.f32(E * n * kk), n, kk));
      const [gu, dn] = [pack(2 * I, D, 5), pack(D, I, 6)];
      const { ids, weights } = routes();
      const out = k.heap.f32(T * D);
      const ew = { numLocalExperts: E, firstExpert: 0 } as ExpertWeights;
      moeRows(out, x, ids, weights, gu, dn, ew, D, I, opts, k);
      expect(Array.from(out)).toEqual(Array.from(reference(k, x, gu, dn)));
      const got = out.slice();
      k.close();
      return got;
    });
    expect(Array.from(outs[1]!)).toEqual(Array.from(outs[0]!));
    expect(Array.from(outs[2]!)).toEqual(Array.from(outs[0]!));
  });
});

describe('moeRows with the shared expert in its jobs', () => {
  /** moeRows alone, then the shared MLP by k.matmul, k.swiglu, k.matmul and k.add. */
  function steps(k: CpuKernels, x: Float32Array, run: () => Float32Array, s: SharedExpertRows) {
    const out = run();
    const g = k.heap.f32(T * 2 * s.I);
    k.matmul(g, x, s.gateUp, T, 2 * s.I, D);
    const act = k.heap.f32(T * s.I);
    k.swiglu(act, g, s.I, opts.alpha, opts.limit);
    const y = k.heap.f32(T * D);
    k.matmul(y, act, s.down, T, D, s.I);
    k.add(out, out, y, D);
    return out;
  }

  // Is = I shares one SwiGLU with the routed rows; Is ≠ I takes its own; remote-only routes
  // leave no routed entry (R = 0), the shared expert still runs.
  for (const [Is, remote] of [
    [I, false],
    [8, false],
    [I, true],
  ] as const) {
    it(`equals moeRows then the shared MLP bit for bit (Is ${Is}${remote ? ', no routed entry' : ''}), at 1, 2 and 3 threads`, () => {
      const outs = [1, 2, 3].map((threads) => {
        const k = new CpuKernels({ threads, minParallelFlops: 0 });
        const x = k.heap.f32(T * D);
        x.set(values(T * D, 1));
        const pack = (n: number, kk: number, seed: number): PackedPanels =>
          new PackedPanels(packPanels(values(n * kk, seed), k.heap.f32(n * kk), n, kk));
        const [gu, dn] = [pack(E * 2 * I, D, 5), pack(E * D, I, 6)];
        const s: SharedExpertRows = { gateUp: pack(2 * Is, D, 7), down: pack(D, Is, 8), I: Is };
        const { ids, weights } = routes();
        if (remote) ids.fill(9);
        const ew = { numLocalExperts: E, firstExpert: 0 } as ExpertWeights;
        const run = (shared: SharedExpertRows | null) => (): Float32Array => {
          const out = k.heap.f32(T * D);
          moeRows(out, x, ids, weights, gu, dn, ew, D, I, opts, k, false, shared);
          return out;
        };
        const got = run(s)();
        expect(Array.from(got)).toEqual(Array.from(steps(k, x, run(null), s)));
        const copy = got.slice();
        k.close();
        return copy;
      });
      expect(Array.from(outs[1]!)).toEqual(Array.from(outs[0]!));
      expect(Array.from(outs[2]!)).toEqual(Array.from(outs[0]!));
    });
  }
});
