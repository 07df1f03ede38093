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
import type { Checkpoint } from '../weights/checkpoint.js';

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

/** Reads this rank's slice of every weight from the checkpoint and uploads it. */
export function loadModelWeights(ckpt: Checkpoint, backend: Backend, o: LoadOptions): ModelWeights {
  const cfg = ckpt.config;
  const up = (
    name: string,
    shape: readonly number[],
    s: Slice = {},
    dtype: 'bf16' | 'f32' = 'bf16',
  ): Tensor => {
    const h = ckpt.read(name, { expectShape: shape, ...s });
    return backend.upload(h.data, h.shape, dtype);
  };
  const D = cfg.hiddenSize;
  const V = cfg.vocabSize;
  const lmHeadName =
    cfg.tieWordEmbeddings && !ckpt.has('lm_head.weight')
      ? 'model.embed_tokens.weight'
      : 'lm_head.weight';
  return {
    embed: up('model.embed_tokens.weight', [V, D]),
    norm: up('model.norm.weight', [D], {}, 'f32'),
    lmHead: up(lmHeadName, [V, D], {
      rows: evenSplit(V, o.parallel.tpRank, o.parallel.tpSize, 'vocab_size'),
    }),
    layers: Array.from({ length: cfg.numLayers }, (_, i) =>
      loadLayer(ckpt, backend, cfg, i, o, up),
    ),
  };
}

type Up = (name: string, shape: readonly number[], s?: Slice, dtype?: 'bf16' | 'f32') => Tensor;

function loadLayer(
  ckpt: Checkpoint,
  backend: Backend,
  cfg: ModelConfig,
  i: number,
  o: LoadOptions,
  up: Up,
): LayerWeights {
  const p = `model.layers.${i}`;
  const D = cfg.hiddenSize;
  const moe = cfg.moeLayers[i]!;
  return {
    inputNorm: up(`${p}.input_layernorm.weight`, [D], {}, 'f32'),
    postAttnNorm: up(`${p}.post_attention_layernorm.weight`, [D], {}, 'f32'),
    attn: loadAttention(cfg, i, o.parallel, up),
    mlp: moe
      ? null
      : loadMlp(
          ckpt,
          backend,
          `${p}.mlp`,
          ['gate_proj', 'up_proj', 'down_proj'],
          D,
          cfg.denseIntermediateSize,
          o.parallel,
        ),
    moe: moe ? loadMoe(ckpt, backend, cfg, i, o, up) : null,
  };
}

function loadAttention(cfg: ModelConfig, i: number, par: ParallelLayout, up: Up): AttentionWeights {
  const p = `model.layers.${i}.self_attn`;
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

/** Reads [gate; up] (rows split over tp) and down (columns split) of one SwiGLU MLP into host arrays. */
function readMlp(
  ckpt: Checkpoint,
  prefix: string,
  names: readonly [string, string, string],
  D: number,
  I: number,
  par: ParallelLayout,
): { gateUp: Float32Array; down: Float32Array; In: number } {
  const [i0, In] = evenSplit(I, par.tpRank, par.tpSize, `${prefix} intermediate size`);
  const gate = ckpt.read(`${prefix}.${names[0]}.weight`, { expectShape: [I, D], rows: [i0, In] });
  const upW = ckpt.read(`${prefix}.${names[1]}.weight`, { expectShape: [I, D], rows: [i0, In] });
  const down = ckpt.read(`${prefix}.${names[2]}.weight`, { expectShape: [D, I], cols: [i0, In] });
  const gateUp = new Float32Array(2 * In * D);
  gateUp.set(gate.data, 0);
  gateUp.set(upW.data, In * D);
  return { gateUp, down: down.data, In };
}

function loadMlp(
  ckpt: Checkpoint,
  backend: Backend,
  prefix: string,
  names: readonly [string, string, string],
  D: number,
  I: number,
  par: ParallelLayout,
): MlpWeights {
  const m = readMlp(ckpt, prefix, names, D, I, par);
  return {
    gateUp: backend.upload(m.gateUp, [2 * m.In, D], 'bf16'),
    down: backend.upload(m.down, [D, m.In], 'bf16'),
  };
}

function loadMoe(
  ckpt: Checkpoint,
  backend: Backend,
  cfg: ModelConfig,
  i: number,
  o: LoadOptions,
  up: Up,
): MoeWeights {
  const p = `model.layers.${i}.block_sparse_moe`;
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
  // Written expert by expert into preallocated tensors: all 128 experts of a real layer are
  // ~4.8e9 values, more than one host array can hold.
  const gateUp = backend.alloc([numSlabs, 2 * In, D], 'bf16');
  const down = backend.alloc([numSlabs, D, In], 'bf16');
  for (let j = 0; j < numSlabs; j++) {
    const e = e0 + j;
    const m =
      e < E
        ? readMlp(ckpt, `${p}.experts.${e}`, ['w1', 'w3', 'w2'], D, I, split)
        : readMlp(ckpt, `${p}.shared_experts`, ['gate_proj', 'up_proj', 'down_proj'], D, I, split);
    backend.write(backend.rows(gateUp, j, 1), m.gateUp);
    backend.write(backend.rows(down, j, 1), m.down);
  }
  return {
    gate: up(`${p}.gate.weight`, [E, D], {}, 'f32'),
    bias:
      cfg.useRoutingBias && ckpt.has(`${p}.e_score_correction_bias`)
        ? up(`${p}.e_score_correction_bias`, [E], {}, 'f32')
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
            ckpt,
            backend,
            `${p}.shared_experts`,
            ['gate_proj', 'up_proj', 'down_proj'],
            D,
            sharedI,
            split,
          )
        : null,
  };
}
