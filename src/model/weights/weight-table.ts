import type { ModelConfig } from '../../config/model-config.js';
import {
  evenSplit,
  kvHeadRange,
  SINGLE_RANK,
  usesExpertParallel,
  type ParallelLayout,
} from '../../parallel/parallel-layout.js';

/**
 * The MiniMax-M3 weight table: every tensor of the text model once, by canonical name
 * (layout A, no VL prefix), with its shape from the config, the config fields behind that
 * shape, its dtype rules and how it is cut over tensor-parallel ranks. The loader, init-random,
 * the checkpoint reader (its names in every layout: `weight-layouts.ts`) and the tests all
 * read it; nothing else spells a weight name or shape.
 */

export type TensorRole = 'embedding' | 'norm' | 'linear' | 'router' | 'bias';

/**
 * How one rank's part of a tensor is chosen. `heads`/`kv-heads`: `unit` rows (or columns) per
 * query / KV head (KV heads replicate beyond tp = Hkv); `vocab`: rows split evenly;
 * `intermediate`: the MLP width `total` split evenly, except under expert parallelism for
 * the MoE's experts, which are whole on the rank that owns them (`moe`).
 */
export type ShardRule =
  | { readonly kind: 'replicated' }
  | { readonly kind: 'heads' | 'kv-heads'; readonly dim: 0 | 1; readonly unit: number }
  | { readonly kind: 'vocab' }
  | {
      readonly kind: 'intermediate';
      readonly dim: 0 | 1;
      readonly total: number;
      readonly moe: boolean;
    };

export interface WeightSpec {
  /** Canonical name (layout A, no prefix). */
  readonly name: string;
  readonly shape: readonly number[];
  /** The config fields each dimension comes from, for errors ("intermediate_size"). */
  readonly dims: readonly string[];
  readonly role: TensorRole;
  /** Linears FP8 checkpoints store quantized (golden/README "FP8 weights"). */
  readonly quantizable: boolean;
  /** The dtype the engine keeps it in on the backend: norms, routers, biases stay float32. */
  readonly upload: 'bf16' | 'f32';
  readonly shard: ShardRule;
}

/** Gate, up and down of one SwiGLU MLP (`w1`, `w3`, `w2` for routed experts). */
export interface MlpSpecs {
  readonly gate: WeightSpec;
  readonly up: WeightSpec;
  readonly down: WeightSpec;
}

export interface IndexSpecs {
  readonly qProj: WeightSpec;
  readonly kProj: WeightSpec;
  readonly qNorm: WeightSpec;
  readonly kNorm: WeightSpec;
}

export interface AttentionSpecs {
  readonly qProj: WeightSpec;
  readonly kProj: WeightSpec;
  readonly vProj: WeightSpec;
  readonly oProj: WeightSpec;
  readonly qNorm: WeightSpec;
  readonly kNorm: WeightSpec;
  readonly index: IndexSpecs | null;
}

export interface MoeSpecs {
  readonly router: WeightSpec;
  readonly bias: WeightSpec | null;
  readonly experts: readonly MlpSpecs[];
  readonly shared: MlpSpecs | null;
}

export interface LayerSpecs {
  readonly inputNorm: WeightSpec;
  readonly postAttnNorm: WeightSpec;
  readonly attn: AttentionSpecs;
  readonly mlp: MlpSpecs | null;
  readonly moe: MoeSpecs | null;
}

export interface WeightTable {
  readonly embed: WeightSpec;
  readonly norm: WeightSpec;
  /** Listed even when tied: a tied checkpoint may still store it. */
  readonly lmHead: WeightSpec;
  readonly tied: boolean;
  readonly layers: readonly LayerSpecs[];
}

const REPLICATED: ShardRule = { kind: 'replicated' };

function spec(
  name: string,
  shape: [number, string][],
  role: TensorRole,
  shard: ShardRule = REPLICATED,
  quantizable = false,
): WeightSpec {
  return {
    name,
    shape: shape.map(([n]) => n),
    dims: shape.map(([, d]) => d),
    role,
    quantizable,
    upload: role === 'norm' || role === 'router' || role === 'bias' ? 'f32' : 'bf16',
    shard,
  };
}

const norm = (name: string, width: [number, string]): WeightSpec => spec(name, [width], 'norm');

/** The table of `c`, built once per load. */
export function weightTable(c: ModelConfig): WeightTable {
  const D: [number, string] = [c.hiddenSize, 'hidden_size'];
  const V: [number, string] = [c.vocabSize, 'vocab_size'];
  return {
    embed: spec('model.embed_tokens.weight', [V, D], 'embedding'),
    norm: norm('model.norm.weight', D),
    lmHead: spec('lm_head.weight', [V, D], 'embedding', { kind: 'vocab' }),
    tied: c.tieWordEmbeddings,
    layers: Array.from({ length: c.numLayers }, (_, l) => layerSpecs(c, l)),
  };
}

function layerSpecs(c: ModelConfig, l: number): LayerSpecs {
  const p = `model.layers.${l}`;
  const D: [number, string] = [c.hiddenSize, 'hidden_size'];
  const moe = c.moeLayers[l] === true;
  return {
    inputNorm: norm(`${p}.input_layernorm.weight`, D),
    postAttnNorm: norm(`${p}.post_attention_layernorm.weight`, D),
    attn: attentionSpecs(c, l),
    mlp: moe
      ? null
      : mlpSpecs(
          `${p}.mlp`,
          ['gate_proj', 'up_proj', 'down_proj'],
          D,
          [c.denseIntermediateSize, 'dense_intermediate_size'],
          false,
        ),
    moe: moe ? moeSpecs(c, `${p}.block_sparse_moe`) : null,
  };
}

function attentionSpecs(c: ModelConfig, l: number): AttentionSpecs {
  const p = `model.layers.${l}.self_attn`;
  const D: [number, string] = [c.hiddenSize, 'hidden_size'];
  const Dh = c.headDim;
  const q: [number, string] = [c.numHeads * Dh, 'num_attention_heads × head_dim'];
  const kv: [number, string] = [c.numKvHeads * Dh, 'num_key_value_heads × head_dim'];
  const heads = (dim: 0 | 1): ShardRule => ({ kind: 'heads', dim, unit: Dh });
  const kvHeads: ShardRule = { kind: 'kv-heads', dim: 0, unit: Dh };
  let index: IndexSpecs | null = null;
  if (c.sparse && c.sparseLayers[l]) {
    const Di: [number, string] = [c.sparse.indexDim, 'index_head_dim'];
    const Hi: [number, string] = [c.sparse.numIndexHeads * Di[0], 'index_n_heads × index_head_dim'];
    index = {
      // Index heads map one-to-one to KV heads, so they are cut exactly like them.
      qProj: spec(`${p}.index_q_proj.weight`, [Hi, D], 'linear', {
        kind: 'kv-heads',
        dim: 0,
        unit: Di[0],
      }),
      kProj: spec(`${p}.index_k_proj.weight`, [Di, D], 'linear'),
      qNorm: norm(`${p}.index_q_norm.weight`, Di),
      kNorm: norm(`${p}.index_k_norm.weight`, Di),
    };
  }
  const dh: [number, string] = [Dh, 'head_dim'];
  return {
    qProj: spec(`${p}.q_proj.weight`, [q, D], 'linear', heads(0), true),
    kProj: spec(`${p}.k_proj.weight`, [kv, D], 'linear', kvHeads, true),
    vProj: spec(`${p}.v_proj.weight`, [kv, D], 'linear', kvHeads, true),
    oProj: spec(`${p}.o_proj.weight`, [D, q], 'linear', heads(1), true),
    qNorm: norm(`${p}.q_norm.weight`, dh),
    kNorm: norm(`${p}.k_norm.weight`, dh),
    index,
  };
}

function mlpSpecs(
  p: string,
  names: readonly [string, string, string],
  D: [number, string],
  I: [number, string],
  moe: boolean,
): MlpSpecs {
  const rows: ShardRule = { kind: 'intermediate', dim: 0, total: I[0], moe };
  const cols: ShardRule = { kind: 'intermediate', dim: 1, total: I[0], moe };
  return {
    gate: spec(`${p}.${names[0]}.weight`, [I, D], 'linear', rows, true),
    up: spec(`${p}.${names[1]}.weight`, [I, D], 'linear', rows, true),
    down: spec(`${p}.${names[2]}.weight`, [D, I], 'linear', cols, true),
  };
}

function moeSpecs(c: ModelConfig, p: string): MoeSpecs {
  const D: [number, string] = [c.hiddenSize, 'hidden_size'];
  const E: [number, string] = [c.numExperts, 'num_local_experts'];
  const I: [number, string] = [c.moeIntermediateSize, 'intermediate_size'];
  const names = ['w1', 'w3', 'w2'] as const;
  // Engines size the shared MLP as shared_intermediate_size × n_shared_experts (§1.1).
  const sharedI: [number, string] = [
    c.sharedIntermediateSize * c.numSharedExperts,
    'shared_intermediate_size × n_shared_experts',
  ];
  return {
    router: spec(`${p}.gate.weight`, [E, D], 'router'),
    bias: c.useRoutingBias ? spec(`${p}.e_score_correction_bias`, [E], 'bias') : null,
    experts: Array.from({ length: c.numExperts }, (_, e) =>
      mlpSpecs(`${p}.experts.${e}`, names, D, I, true),
    ),
    shared:
      c.numSharedExperts > 0
        ? mlpSpecs(`${p}.shared_experts`, ['gate_proj', 'up_proj', 'down_proj'], D, sharedI, true)
        : null,
  };
}

const mlpList = (m: MlpSpecs): WeightSpec[] => [m.gate, m.up, m.down];

/** Every tensor of the table in checkpoint order (embedding, layers, head); tied heads left out. */
export function allTensors(t: WeightTable): WeightSpec[] {
  const out = [t.embed];
  for (const l of t.layers) {
    const a = l.attn;
    out.push(l.inputNorm, a.qProj, a.kProj, a.vProj, a.oProj, a.qNorm, a.kNorm);
    if (a.index) out.push(a.index.qProj, a.index.kProj, a.index.qNorm, a.index.kNorm);
    out.push(l.postAttnNorm);
    if (l.mlp) out.push(...mlpList(l.mlp));
    if (l.moe) {
      out.push(l.moe.router);
      if (l.moe.bias) out.push(l.moe.bias);
      for (const e of l.moe.experts) out.push(...mlpList(e));
      if (l.moe.shared) out.push(...mlpList(l.moe.shared));
    }
  }
  out.push(t.norm);
  if (!t.tied) out.push(t.lmHead);
  return out;
}

/** Every canonical tensor of the text model, in checkpoint order. */
export function modelTensors(c: ModelConfig): WeightSpec[] {
  return allTensors(weightTable(c));
}

/** [start, count) of dim 0 / dim 1 that one rank reads; absent = the whole dimension. */
export interface ShardSlice {
  readonly rows?: [number, number];
  readonly cols?: [number, number];
}

/** This rank's part of `s` under `par` (its shard rule applied). */
export function shardSlice(s: WeightSpec, c: ModelConfig, par: ParallelLayout): ShardSlice {
  const r = s.shard;
  const on = (dim: 0 | 1, range: [number, number]): ShardSlice =>
    dim === 0 ? { rows: range } : { cols: range };
  switch (r.kind) {
    case 'replicated':
      return {};
    case 'vocab':
      return { rows: evenSplit(c.vocabSize, par.tpRank, par.tpSize, 'vocab_size') };
    case 'heads':
    case 'kv-heads': {
      const [h0, hn] =
        r.kind === 'heads'
          ? evenSplit(c.numHeads, par.tpRank, par.tpSize, 'num_attention_heads')
          : kvHeadRange(c, par);
      return on(r.dim, [h0 * r.unit, hn * r.unit]);
    }
    case 'intermediate': {
      // EP: whole experts of this rank's range, and a replicated shared expert.
      const split = r.moe && usesExpertParallel(par) ? SINGLE_RANK : par;
      const what = `${s.name} ${s.dims[r.dim]}`;
      return on(r.dim, evenSplit(r.total, split.tpRank, split.tpSize, what));
    }
  }
}

/** The stored companion of a quantized weight: `<name>_scale_inv`. */
export const SCALE_SUFFIX = '_scale_inv';

/**
 * Shape of the scale tensor of a quantized [out, in] weight with [bo, bi] blocks; a stacked
 * [N, out, in] weight has one scale grid per matrix.
 */
export function scaleShape(shape: readonly number[], block: readonly [number, number]): number[] {
  const [out, inn] = shape.slice(-2) as [number, number];
  return [...shape.slice(0, -2), Math.ceil(out / block[0]), Math.ceil(inn / block[1])];
}
