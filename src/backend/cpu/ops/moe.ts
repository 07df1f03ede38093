import type { ExpertWeights, MoeOptions, RouterOptions } from '../../backend.js';
import type { PackedPanels } from '../packed-panels.js';
import type { CpuKernels } from '../wasm/cpu-kernels.js';

/** SwiGLU-OAI: g = min(gate, L), u = clamp(up, −L, L), out = g·σ(α·g)·(u + 1). gu [M, 2I] → out [M, I]. */
export function swigluOaiRows(
  out: Float32Array,
  gu: Float32Array,
  I: number,
  alpha: number,
  limit: number,
): void {
  const M = out.length / I;
  for (let m = 0; m < M; m++) {
    const g0 = m * 2 * I;
    for (let i = 0; i < I; i++) {
      const g = Math.min(gu[g0 + i]!, limit);
      const u = Math.min(Math.max(gu[g0 + I + i]!, -limit), limit);
      out[m * I + i] = (g / (1 + Math.exp(-alpha * g))) * (u + 1);
    }
  }
}

/**
 * Sigmoid router with selection bias; see Backend.routerTopK. The top K by biased score, ties
 * to the lower expert id, picked by K scans (what a sort by (score desc, id asc) puts first).
 */
export function routerTopKRows(
  ids: Int32Array,
  weights: Float32Array,
  logits: Float32Array,
  bias: Float32Array | null,
  E: number,
  o: RouterOptions,
): void {
  const T = logits.length / E;
  const width = o.topK + (o.sharedExpertId === null ? 0 : 1);
  const s = new Float64Array(E);
  const sel = new Float64Array(E);
  const taken = new Uint8Array(E);
  for (let t = 0; t < T; t++) {
    for (let e = 0; e < E; e++) {
      s[e] = 1 / (1 + Math.exp(-logits[t * E + e]!));
      sel[e] = s[e]! + (bias ? bias[e]! : 0);
    }
    taken.fill(0);
    let sum = 0;
    for (let j = 0; j < o.topK; j++) {
      let best = -1;
      for (let e = 0; e < E; e++) if (!taken[e] && (best < 0 || sel[e]! > sel[best]!)) best = e;
      taken[best] = 1;
      ids[t * width + j] = best;
      sum += s[best]!;
    }
    for (let j = 0; j < o.topK; j++)
      weights[t * width + j] = (s[ids[t * width + j]!]! / sum) * o.scale;
    if (o.sharedExpertId !== null) {
      ids[t * width + o.topK] = o.sharedExpertId;
      weights[t * width + o.topK] = 1;
    }
  }
}

/** Routed experts: tokens grouped per expert, two matmuls per expert, weighted scatter-add. */
export function moeRows(
  out: Float32Array,
  x: Float32Array,
  ids: Int32Array,
  weights: Float32Array,
  gateUp: Float32Array | Uint16Array | PackedPanels,
  down: Float32Array | Uint16Array | PackedPanels,
  ew: ExpertWeights,
  D: number,
  I: number,
  o: MoeOptions,
  k: CpuKernels,
): void {
  const width = ids.length / (x.length / D);
  const perExpert: number[][] = Array.from({ length: ew.numLocalExperts }, () => []);
  for (let r = 0; r < ids.length; r++) {
    const local = ids[r]! - ew.firstExpert;
    if (local >= 0 && local < ew.numLocalExperts) perExpert[local]!.push(r);
  }
  out.fill(0);
  perExpert.forEach((entries, e) => {
    const n = entries.length;
    if (n === 0) return;
    const xs = k.heap.f32(n * D);
    entries.forEach((r, i) =>
      xs.set(x.subarray(Math.floor(r / width) * D, Math.floor(r / width) * D + D), i * D),
    );
    const gu = k.heap.f32(n * 2 * I);
    k.matmul(gu, xs, gateUp.subarray(e * 2 * I * D, (e + 1) * 2 * I * D), n, 2 * I, D);
    const act = k.heap.f32(n * I);
    k.swiglu(act, gu, I, o.alpha, o.limit);
    const y = k.heap.f32(n * D);
    k.matmul(y, act, down.subarray(e * D * I, (e + 1) * D * I), n, D, I);
    entries.forEach((r, i) => {
      const w = weights[r]!;
      const t0 = Math.floor(r / width) * D;
      for (let d = 0; d < D; d++) out[t0 + d] = out[t0 + d]! + w * y[i * D + d]!;
    });
    for (const a of [xs, gu, act, y]) k.heap.free(a);
  });
}
