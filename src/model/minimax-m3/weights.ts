import type { Backend, ExpertWeights } from '../../backend/backend.js';
import type { ModelConfig } from '../../config/model-config.js';
import {
  evenSplit,
  expertRange,
  kvHeadRange,
  SINGLE_RANK,
  usesExpertParallel,
  type ParallelLayout,
} from '../../parallel/parallel-layout.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { WeightSource } from '../weights/weight-source.js';

export interface IndexWeights {
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

type Slice = { rows?: [number, number]; cols?: [number, number] };

/** A weight builder's view of the source: allocate, schedule the fill, return the tensor. */
interface Loader {
  readonly src: WeightSource;
  readonly backend: Backend;
  up(name: string, shape: readonly number[], s?: Slice, dtype?: 'bf16' | 'f32'): Tensor;
}

function slicedShape(shape: readonly number[], s: Slice): number[] {
  const out = [...shape];
  if (s.rows) out[0] = s.rows[1];
  if (s.cols) out[1] = s.cols[1];
  return out;
}

/**
 * Allocates this rank's slice of every weight and schedules it to be filled from `src`
 * (values arrive when `src.load()` resolves).
 */
export function loadModelWeights(
  src: WeightSource,
  backend: Backend,
  o: LoadOptions,
): ModelWeights {
  const cfg = src.config;
  const ld: Loader = {
    src,
    backend,
    up(name, shape, s = {}, dtype = 'bf16') {
      const t = backend.alloc(slicedShape(shape, s), dtype);
      src.fill(t, name, { expectShape: shape, ...s });
      return t;
    },
  };
  const D = cfg.hiddenSize;
  const V = cfg.vocabSize;
  const lmHeadName =
    cfg.tieWordEmbeddings && !src.has('lm_head.weight')
      ? 'model.embed_tokens.weight'
      : 'lm_head.weight';
  return {
    embed: ld.up('model.embed_tokens.weight', [V, D]),
    norm: ld.up('model.norm.weight', [D], {}, 'f32'),
    lmHead: ld.up(lmHeadName, [V, D], {
      rows: evenSplit(V, o.parallel.tpRank, o.parallel.tpSize, 'vocab_size'),
    }),
    layers: Array.from({ length: cfg.numLayers }, (_, i) => loadLayer(ld, cfg, i, o)),
  };
}

function loadLayer(ld: Loader, cfg: ModelConfig, i: number, o: LoadOptions): LayerWeights {
  const p = `model.layers.${i}`;
  const D = cfg.hiddenSize;
  const moe = cfg.moeLayers[i]!;
  return {
    inputNorm: ld.up(`${p}.input_layernorm.weight`, [D], {}, 'f32'),
    postAttnNorm: ld.up(`${p}.post_attention_layernorm.weight`, [D], {}, 'f32'),
    attn: loadAttention(ld, cfg, i, o.parallel),
    mlp: moe
      ? null
      : loadMlp(
          ld,
          `${p}.mlp`,
          ['gate_proj', 'up_proj', 'down_proj'],
          D,
          cfg.denseIntermediateSize,
          o.parallel,
        ),
    moe: moe ? loadMoe(ld, cfg, i, o) : null,
  };
}

function loadAttention(
  ld: Loader,
  cfg: ModelConfig,
  i: number,
  par: ParallelLayout,
): AttentionWeights {
  const p = `model.layers.${i}.self_attn`;
  const up = ld.up;
  const { hiddenSize: D, headDim: Dh, numHeads: H, numKvHeads: Hkv } = cfg;
  const [h0, hn] = evenSplit(H, par.tpRank, par.tpSize, 'num_attention_heads');
  const [kv0, kvn] = kvHeadRange(cfg, par);
  let index: IndexWeights | null = null;
  if (cfg.sparseLayers[i] && cfg.sparse) {
    const Di = cfg.sparse.indexDim;
    index = {
      // Index heads map one-to-one to KV heads, so they are cut exactly like them.
      qProj: up(`${p}.index_q_proj.weight`, [cfg.sparse.numIndexHeads * Di, D], {
        rows: [kv0 * Di, kvn * Di],
      }),
      kProj: up(`${p}.index_k_proj.weight`, [Di, D]),
      qNorm: up(`${p}.index_q_norm.weight`, [Di], {}, 'f32'),
      kNorm: up(`${p}.index_k_norm.weight`, [Di], {}, 'f32'),
    };
  }
  return {
    qProj: up(`${p}.q_proj.weight`, [H * Dh, D], { rows: [h0 * Dh, hn * Dh] }),
    kProj: up(`${p}.k_proj.weight`, [Hkv * Dh, D], { rows: [kv0 * Dh, kvn * Dh] }),
    vProj: up(`${p}.v_proj.weight`, [Hkv * Dh, D], { rows: [kv0 * Dh, kvn * Dh] }),
    oProj: up(`${p}.o_proj.weight`, [D, H * Dh], { cols: [h0 * Dh, hn * Dh] }),
    qNorm: up(`${p}.q_norm.weight`, [Dh], {}, 'f32'),
    kNorm: up(`${p}.k_norm.weight`, [Dh], {}, 'f32'),
    index,
  };
}

/**
 * Schedules one SwiGLU MLP into `gateUp` [2·I_local, D] (gate rows, then up rows; both split
 * over tp) and `down` [D, I_local] (columns split).
 */
function fillMlp(
  ld: Loader,
  gateUp: Tensor,
  down: Tensor,
  prefix: string,
  names: readonly [string, string, string],
  D: number,
  I: number,
  par: ParallelLayout,
): void {
  const [i0, In] = evenSplit(I, par.tpRank, par.tpSize, `${prefix} intermediate size`);
  const rows = ld.backend.view(gateUp, [2 * In, D]);
  ld.src.fill(ld.backend.rows(rows, 0, In), `${prefix}.${names[0]}.weight`, {
    expectShape: [I, D],
    rows: [i0, In],
  });
  ld.src.fill(ld.backend.rows(rows, In, In), `${prefix}.${names[1]}.weight`, {
    expectShape: [I, D],
    rows: [i0, In],
  });
  ld.src.fill(down, `${prefix}.${names[2]}.weight`, { expectShape: [D, I], cols: [i0, In] });
}

function loadMlp(
  ld: Loader,
  prefix: string,
  names: readonly [string, string, string],
  D: number,
  I: number,
  par: ParallelLayout,
): MlpWeights {
  const In = evenSplit(I, par.tpRank, par.tpSize, `${prefix} intermediate size`)[1];
  const gateUp = ld.backend.alloc([2 * In, D], 'bf16');
  const down = ld.backend.alloc([D, In], 'bf16');
  fillMlp(ld, gateUp, down, prefix, names, D, I, par);
  return { gateUp, down };
}

function loadMoe(ld: Loader, cfg: ModelConfig, i: number, o: LoadOptions): MoeWeights {
  const p = `model.layers.${i}.block_sparse_moe`;
  const { backend, src } = ld;
  const { hiddenSize: D, numExperts: E, moeIntermediateSize: I } = cfg;
  const hasShared = cfg.numSharedExperts > 0;
  const sharedI = cfg.sharedIntermediateSize * Math.max(1, cfg.numSharedExperts);
  const ep = usesExpertParallel(o.parallel);
  const fuse = o.fuseSharedExperts && hasShared;
  if (fuse && ep)
    throw new Error('shared-experts fusion is not supported with expert parallelism (--ep)');
  if (fuse && sharedI !== I)
    throw new Error(`shared-experts fusion needs shared width ${sharedI} = expert width ${I}`);
  // EP: whole experts of this rank's range, and a replicated shared expert. TP: every expert
  // (and the shared one) split on the intermediate dimension.
  const [e0, numLocal] = expertRange(cfg, o.parallel);
  const split = ep ? SINGLE_RANK : o.parallel;
  const numSlabs = numLocal + (fuse ? 1 : 0);
  const In = I / split.tpSize;
  // One slab per layer, each expert's slice read straight into its rows: all 128 experts of
  // a real layer are ~4.8e9 values, more than one host array could hold.
  const gateUp = backend.alloc([numSlabs, 2 * In, D], 'bf16');
  const down = backend.alloc([numSlabs, D, In], 'bf16');
  for (let j = 0; j < numSlabs; j++) {
    const e = e0 + j;
    const [prefix, names] =
      e < E
        ? [`${p}.experts.${e}`, ['w1', 'w3', 'w2'] as const]
        : [`${p}.shared_experts`, ['gate_proj', 'up_proj', 'down_proj'] as const];
    fillMlp(ld, backend.rows(gateUp, j, 1), backend.rows(down, j, 1), prefix, names, D, I, split);
  }
  return {
    gate: ld.up(`${p}.gate.weight`, [E, D], {}, 'f32'),
    bias:
      cfg.useRoutingBias && src.has(`${p}.e_score_correction_bias`)
        ? ld.up(`${p}.e_score_correction_bias`, [E], {}, 'f32')
        : null,
    experts: {
      gateUp,
      down,
      firstExpert: e0,
      numLocalExperts: numSlabs,
    },
    shared:
      hasShared && !fuse
        ? loadMlp(
            ld,
            `${p}.shared_experts`,
            ['gate_proj', 'up_proj', 'down_proj'],
            D,
            sharedI,
            split,
          )
        : null,
  };
}
