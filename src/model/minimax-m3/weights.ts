import type { Backend, ExpertWeights } from '../../backend/backend.js';
import type { ModelConfig } from '../../config/model-config.js';
import {
  expertRange,
  usesExpertParallel,
  type ParallelLayout,
} from '../../parallel/parallel-layout.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { WeightSource } from '../weights/weight-source.js';
import {
  shardSlice,
  weightTable,
  type AttentionSpecs,
  type LayerSpecs,
  type MlpSpecs,
  type MoeSpecs,
  type ShardSlice,
  type WeightSpec,
} from '../weights/weight-table.js';

export interface IndexWeights {
  // q and k: adjacent rows of one allocation when both are plain (packIndexProjections)
  readonly qProj: Tensor; // [Hidx_local·Didx, D]
  readonly kProj: Tensor; // [Didx, D]
  readonly qNorm: Tensor; // [Didx]
  readonly kNorm: Tensor; // [Didx]
}

export interface AttentionWeights {
  readonly qProj: Tensor; // [H_local·Dh, D]
  readonly kProj: Tensor; // [Hkv_local·Dh, D]
  readonly vProj: Tensor; // [Hkv_local·Dh, D]
  readonly oProj: Tensor; // [D, H_local·Dh]
  readonly qNorm: Tensor; // [Dh]
  readonly kNorm: Tensor; // [Dh]
  readonly index: IndexWeights | null;
}

export interface MlpWeights {
  readonly gateUp: Tensor; // [2·I_local, D]
  readonly down: Tensor; // [D, I_local]
}

export interface MoeWeights {
  readonly gate: Tensor; // [E, D] float32
  readonly bias: Tensor | null; // [E] float32
  readonly experts: ExpertWeights;
  /** Null when the shared expert is fused into `experts` as expert id E. */
  readonly shared: MlpWeights | null;
}

export interface LayerWeights {
  readonly inputNorm: Tensor;
  readonly postAttnNorm: Tensor;
  readonly attn: AttentionWeights;
  readonly mlp: MlpWeights | null;
  readonly moe: MoeWeights | null;
}

export interface ModelWeights {
  readonly embed: Tensor; // [V, D]
  readonly norm: Tensor; // [D]
  readonly lmHead: Tensor; // [V_local, D]
  readonly layers: readonly LayerWeights[];
}

export interface LoadOptions {
  readonly parallel: ParallelLayout;
  /** Run the shared expert as routed expert id E with weight 1 (seed 002). */
  readonly fuseSharedExperts: boolean;
}

/** A weight builder's view of the source: allocate, schedule the fill, return the tensor. */
interface Loader {
  readonly src: WeightSource;
  readonly backend: Backend;
  /** Allocates this rank's part of `spec` (its shard rule) and schedules it from `name`. */
  up(spec: WeightSpec, name?: string): Tensor;
  /**
   * A weight of `shape` for the stored tensor `name` (of `spec`): FP8 codes and scales when it
   * is stored FP8 and the backend keeps FP8 weights, else `spec.upload`.
   */
  alloc(shape: readonly number[], spec: WeightSpec, name?: string): Tensor;
}

function slicedShape(shape: readonly number[], s: ShardSlice): number[] {
  const out = [...shape];
  if (s.rows) out[0] = s.rows[1];
  if (s.cols) out[1] = s.cols[1];
  return out;
}

/**
 * Allocates this rank's slice of every weight of the table and schedules it to be filled
 * from `src` (values arrive when `src.load()` resolves).
 */
export function loadModelWeights(
  src: WeightSource,
  backend: Backend,
  o: LoadOptions,
): ModelWeights {
  const cfg = src.config;
  const table = weightTable(cfg);
  const ld: Loader = {
    src,
    backend,
    up(spec, name = spec.name) {
      const s = shardSlice(spec, cfg, o.parallel);
      const t = this.alloc(slicedShape(spec.shape, s), spec, name);
      src.fill(t, name, { expectShape: spec.shape, ...s });
      return t;
    },
    alloc(shape, spec, name = spec.name) {
      const scaling = spec.quantizable && src.has(name) ? src.fp8Scaling(name) : null;
      if (scaling && backend.fp8) return backend.fp8.alloc(shape, scaling);
      // The router's f32 weight, for a backend that keeps a faster copy of it (CUDA: bf16x3).
      if (spec.role === 'router' && backend.allocF32Weight) return backend.allocF32Weight(shape);
      const t = backend.alloc(shape, spec.upload);
      // Dequantized at load (the CPU): the ops still mean the FP8 weight's (W8A8 rule).
      if (scaling) backend.markDequantizedFp8?.(t, scaling);
      return t;
    },
  };
  // A tied head reads the embedding, cut like the head.
  const lmHeadName =
    table.tied && !src.has(table.lmHead.name) ? table.embed.name : table.lmHead.name;
  return {
    embed: ld.up(table.embed),
    norm: ld.up(table.norm),
    lmHead: ld.up(table.lmHead, lmHeadName),
    layers: table.layers.map((l) => loadLayer(ld, l, o)),
  };
}

function loadLayer(ld: Loader, l: LayerSpecs, o: LoadOptions): LayerWeights {
  return {
    inputNorm: ld.up(l.inputNorm),
    postAttnNorm: ld.up(l.postAttnNorm),
    attn: loadAttention(ld, l.attn, o.parallel),
    mlp: l.mlp ? loadMlp(ld, l.mlp, o.parallel) : null,
    moe: l.moe ? loadMoe(ld, l.moe, o) : null,
  };
}

function loadAttention(ld: Loader, a: AttentionSpecs, par: ParallelLayout): AttentionWeights {
  const i = a.index;
  return {
    qProj: ld.up(a.qProj),
    kProj: ld.up(a.kProj),
    vProj: ld.up(a.vProj),
    oProj: ld.up(a.oProj),
    qNorm: ld.up(a.qNorm),
    kNorm: ld.up(a.kNorm),
    index: i && {
      ...packIndexProjections(ld, i.qProj, i.kProj, par),
      qNorm: ld.up(i.qNorm),
      kNorm: ld.up(i.kNorm),
    },
  };
}

/**
 * The MSA index q and k projections as adjacent rows of one tensor [Hidx·Didx + Didx, D] when
 * neither is stored FP8 (a block-FP8 row view would cut its scale blocks): a backend's
 * matmulMany can then run them as one GEMM (at prefill sizes the 128-row k alone runs at a
 * few percent of the GEMM rate on CUDA). The values are the same as loaded apart.
 */
function packIndexProjections(
  ld: Loader,
  q: WeightSpec,
  k: WeightSpec,
  par: ParallelLayout,
): { qProj: Tensor; kProj: Tensor } {
  const { src, backend } = ld;
  const cfg = src.config;
  const stored = (s: WeightSpec) => s.quantizable && src.has(s.name) && src.fp8Scaling(s.name);
  if (stored(q) || stored(k) || q.upload !== k.upload) return { qProj: ld.up(q), kProj: ld.up(k) };
  const [qs, ks] = [q, k].map((s) => shardSlice(s, cfg, par));
  const [qShape, kShape] = [slicedShape(q.shape, qs!), slicedShape(k.shape, ks!)];
  const both = ld.alloc([qShape[0]! + kShape[0]!, qShape[1]!], q);
  const qProj = backend.rows(both, 0, qShape[0]!);
  const kProj = backend.rows(both, qShape[0]!, kShape[0]!);
  src.fill(qProj, q.name, { expectShape: q.shape, ...qs });
  src.fill(kProj, k.name, { expectShape: k.shape, ...ks });
  return { qProj, kProj };
}

/** This rank's width of an MLP: its gate's rows under the shard rule. */
function localWidth(m: MlpSpecs, cfg: ModelConfig, par: ParallelLayout): number {
  return shardSlice(m.gate, cfg, par).rows?.[1] ?? m.gate.shape[0]!;
}

/**
 * Schedules one SwiGLU MLP into `gateUp` [2·I_local, D] (gate rows, then up rows; both split
 * over tp) and `down` [D, I_local] (columns split).
 */
function fillMlp(ld: Loader, gateUp: Tensor, down: Tensor, m: MlpSpecs, par: ParallelLayout): void {
  const cfg = ld.src.config;
  const In = localWidth(m, cfg, par);
  const D = m.gate.shape[1]!;
  const rows = ld.backend.view(gateUp, [2 * In, D]);
  const fill = (dst: Tensor, s: WeightSpec) =>
    ld.src.fill(dst, s.name, { expectShape: s.shape, ...shardSlice(s, cfg, par) });
  fill(ld.backend.rows(rows, 0, In), m.gate);
  fill(ld.backend.rows(rows, In, In), m.up);
  fill(down, m.down);
}

function loadMlp(ld: Loader, m: MlpSpecs, par: ParallelLayout): MlpWeights {
  const In = localWidth(m, ld.src.config, par);
  const D = m.gate.shape[1]!;
  const gateUp = ld.alloc([2 * In, D], m.gate);
  const down = ld.alloc([D, In], m.down);
  fillMlp(ld, gateUp, down, m, par);
  return { gateUp, down };
}

function loadMoe(ld: Loader, t: MoeSpecs, o: LoadOptions): MoeWeights {
  const { backend, src } = ld;
  const cfg = src.config;
  const { hiddenSize: D, numExperts: E, moeIntermediateSize: I } = cfg;
  const ep = usesExpertParallel(o.parallel);
  const fuse = o.fuseSharedExperts && t.shared !== null;
  if (fuse && ep)
    throw new Error('shared-experts fusion is not supported with expert parallelism (--ep)');
  const sharedI = t.shared?.gate.shape[0] ?? 0;
  if (fuse && sharedI !== I)
    throw new Error(`shared-experts fusion needs shared width ${sharedI} = expert width ${I}`);
  // EP: whole experts of this rank's range (the shard rule keeps experts whole under EP).
  const [e0, numLocal] = expertRange(cfg, o.parallel);
  const numSlabs = numLocal + (fuse ? 1 : 0);
  const In = localWidth(t.experts[0]!, cfg, o.parallel);
  // One slab per layer, each expert's slice read straight into its rows: all 128 experts of
  // a real layer are ~4.8e9 values, more than one host array could hold.
  const first = t.experts[e0] ?? t.shared!;
  const gateUp = ld.alloc([numSlabs, 2 * In, D], first.gate);
  const down = ld.alloc([numSlabs, D, In], first.down);
  for (let j = 0; j < numSlabs; j++) {
    const e = e0 + j;
    const m = e < E ? t.experts[e]! : t.shared!;
    fillMlp(ld, backend.rows(gateUp, j, 1), backend.rows(down, j, 1), m, o.parallel);
  }
  return {
    gate: ld.up(t.router),
    bias: t.bias && src.has(t.bias.name) ? ld.up(t.bias) : null,
    experts: { gateUp, down, firstExpert: e0, numLocalExperts: numSlabs },
    shared: t.shared && !fuse ? loadMlp(ld, t.shared, o.parallel) : null,
  };
}
