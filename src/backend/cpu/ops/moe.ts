import type { ExpertWeights, MoeOptions, RouterOptions } from '../../backend.js';
import { w8a8Dequantize } from '../../../tensor/fp8-activation.js';
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

/** A shared expert for moeRows: its weights as the kernels read them, and its width Is. */
export interface SharedExpertRows {
  readonly gateUp: Float32Array | Uint16Array | PackedPanels; // [2·Is, D]
  readonly down: Float32Array | Uint16Array | PackedPanels; // [D, Is]
  readonly I: number;
}

/** The (token, slot) entries of this rank's experts, grouped by expert in entry order. */
interface ExpertEntries {
  /** count[e]: expert e's first entry; count[E]: the entries R. */
  readonly count: Int32Array;
  /** [R] token row of each entry, in the heap. */
  readonly tok: Int32Array;
  /** [R] its routing weight, in the heap. */
  readonly wt: Float32Array;
}

function groupEntries(
  ids: Int32Array,
  weights: Float32Array,
  ew: ExpertWeights,
  width: number,
  k: CpuKernels,
): ExpertEntries {
  const E = ew.numLocalExperts;
  const count = new Int32Array(E + 1);
  for (let r = 0; r < ids.length; r++) {
    const local = ids[r]! - ew.firstExpert;
    if (local >= 0 && local < E) count[local + 1]!++;
  }
  for (let e = 0; e < E; e++) count[e + 1]! += count[e]!;
  const tok = k.heap.i32(count[E]!);
  const wt = k.heap.f32(count[E]!);
  const fill = count.slice(0, E);
  for (let r = 0; r < ids.length; r++) {
    const local = ids[r]! - ew.firstExpert;
    if (local < 0 || local >= E) continue;
    const at = fill[local]!++;
    tok[at] = Math.floor(r / width);
    wt[at] = weights[r]!;
  }
  return { count, tok, wt };
}

/**
 * Routed experts: the (token, slot) entries grouped by expert (expert order, then entry
 * order) and their token rows gathered into one [R, D] block; every expert's gate|up matmul
 * in one pool job, one SwiGLU over all R rows, every down matmul in one job; then the
 * weighted scatter-add in entry order (float64 per update, as before). Per-row results do
 * not depend on how rows are grouped or split, so this equals one expert at a time bit for bit.
 * `w8a8`: the gathered rows and the SwiGLU output are replaced by their W8A8 values (per row
 * and 128 inputs, tensor/fp8-activation.ts) before the GEMMs that read them.
 * `shared`: the shared expert's GEMMs on all T rows of x join the two jobs (its SwiGLU too
 * where Is = I: its rows follow the routed ones), and its output is added to out after the
 * scatter-add: the bits of its own matmul, SwiGLU, matmul and add, in fewer pool jobs.
 */
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
  w8a8 = false,
  shared: SharedExpertRows | null = null,
): void {
  const T = x.length / D;
  const { count, tok, wt } = groupEntries(ids, weights, ew, ids.length / T, k);
  const E = ew.numLocalExperts;
  const R = count[E]!;
  const [Ts, Is] = shared ? [T, shared.I] : [0, 0];
  k.zero(out);
  if (R === 0 && !shared) {
    k.heap.free(tok);
    k.heap.free(wt);
    return;
  }
  const xs = k.heap.f32(R * D); // [R, D]
  k.gatherRows(xs, x, tok, D);
  if (w8a8) w8a8Dequantize(xs, D);
  const gu = k.heap.f32(R * 2 * I + Ts * 2 * Is); // [R, 2I] then [T, 2Is]
  const act = k.heap.f32(R * I + Ts * Is); // [R, I] then [T, Is]
  const y = k.heap.f32(R * D + Ts * D); // [R, D] then [T, D]
  const experts = Array.from({ length: E }, (_, e) => e).filter((e) => count[e + 1]! > count[e]!);
  const rows = (a: Float32Array, e: number, n: number): Float32Array =>
    a.subarray(count[e]! * n, count[e + 1]! * n);
  const [guS, actS, yS] = [gu.subarray(R * 2 * I), act.subarray(R * I), y.subarray(R * D)];
  // prettier-ignore
  k.matmuls([...experts.map((e) => ({ out: rows(gu, e, 2 * I), x: rows(xs, e, D),
    w: gateUp.subarray(e * 2 * I * D, (e + 1) * 2 * I * D), M: count[e + 1]! - count[e]! })),
    ...(shared ? [{ out: guS, x, w: shared.gateUp, M: T, N: 2 * Is }] : [])], 2 * I, D);
  if (Is === I || !shared) k.swiglu(act, gu, I, o.alpha, o.limit);
  else {
    k.swiglu(act.subarray(0, R * I), gu.subarray(0, R * 2 * I), I, o.alpha, o.limit);
    k.swiglu(actS, guS, Is, o.alpha, o.limit);
  }
  if (w8a8) w8a8Dequantize(act.subarray(0, R * I), I);
  // prettier-ignore
  k.matmuls([...experts.map((e) => ({ out: rows(y, e, D), x: rows(act, e, I),
    w: down.subarray(e * D * I, (e + 1) * D * I), M: count[e + 1]! - count[e]! })),
    ...(shared ? [{ out: yS, x: actS, w: shared.down, M: T, K: Is }] : [])], D, I);
  if (R > 0) k.scatterAdd(out, y.subarray(0, R * D), tok, wt, D);
  if (shared) k.add(out, out, yS, D);
  for (const a of [tok, wt, xs, gu, act, y]) k.heap.free(a);
}
