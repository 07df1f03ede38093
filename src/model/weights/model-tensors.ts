import type { ModelConfig } from '../../config/model-config.js';

export type TensorRole = 'embedding' | 'norm' | 'linear' | 'router' | 'bias';

/** A tensor the text model needs, by canonical name, with the shape its config implies. */
export interface ModelTensorSpec {
  readonly name: string;
  readonly shape: readonly number[];
  readonly role: TensorRole;
  /** True for the linears that FP8 checkpoints store quantized (golden/README "FP8 weights"). */
  readonly quantizable: boolean;
}

const spec = (
  name: string,
  shape: number[],
  role: TensorRole,
  quantizable = false,
): ModelTensorSpec => ({ name, shape, role, quantizable });

/** Every canonical tensor of the text model, in checkpoint order (embedding, layers, head). */
export function modelTensors(c: ModelConfig): ModelTensorSpec[] {
  const d = c.hiddenSize;
  const out = [spec('model.embed_tokens.weight', [c.vocabSize, d], 'embedding')];
  for (let l = 0; l < c.numLayers; l++) out.push(...layerTensors(c, l));
  out.push(spec('model.norm.weight', [d], 'norm'));
  if (!c.tieWordEmbeddings) out.push(spec('lm_head.weight', [c.vocabSize, d], 'embedding'));
  return out;
}

/** The tensors of decoder layer `l`. */
export function layerTensors(c: ModelConfig, l: number): ModelTensorSpec[] {
  const p = `model.layers.${l}`;
  const d = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const out = [
    spec(`${p}.input_layernorm.weight`, [d], 'norm'),
    spec(`${p}.self_attn.q_proj.weight`, [q, d], 'linear', true),
    spec(`${p}.self_attn.k_proj.weight`, [kv, d], 'linear', true),
    spec(`${p}.self_attn.v_proj.weight`, [kv, d], 'linear', true),
    spec(`${p}.self_attn.o_proj.weight`, [d, q], 'linear', true),
    spec(`${p}.self_attn.q_norm.weight`, [c.headDim], 'norm'),
    spec(`${p}.self_attn.k_norm.weight`, [c.headDim], 'norm'),
  ];
  if (c.sparse && c.sparseLayers[l]) {
    const s = c.sparse;
    out.push(
      spec(`${p}.self_attn.index_q_proj.weight`, [s.numIndexHeads * s.indexDim, d], 'linear'),
      spec(`${p}.self_attn.index_k_proj.weight`, [s.indexDim, d], 'linear'),
      spec(`${p}.self_attn.index_q_norm.weight`, [s.indexDim], 'norm'),
      spec(`${p}.self_attn.index_k_norm.weight`, [s.indexDim], 'norm'),
    );
  }
  out.push(spec(`${p}.post_attention_layernorm.weight`, [d], 'norm'));
  if (c.moeLayers[l]) out.push(...moeTensors(c, `${p}.block_sparse_moe`));
  else out.push(...mlpTensors(`${p}.mlp`, d, c.denseIntermediateSize));
  return out;
}

function mlpTensors(p: string, d: number, inter: number): ModelTensorSpec[] {
  return [
    spec(`${p}.gate_proj.weight`, [inter, d], 'linear', true),
    spec(`${p}.up_proj.weight`, [inter, d], 'linear', true),
    spec(`${p}.down_proj.weight`, [d, inter], 'linear', true),
  ];
}

function moeTensors(c: ModelConfig, p: string): ModelTensorSpec[] {
  const d = c.hiddenSize;
  const i = c.moeIntermediateSize;
  const out = [spec(`${p}.gate.weight`, [c.numExperts, d], 'router')];
  if (c.useRoutingBias) out.push(spec(`${p}.e_score_correction_bias`, [c.numExperts], 'bias'));
  for (let e = 0; e < c.numExperts; e++) {
    out.push(
      spec(`${p}.experts.${e}.w1.weight`, [i, d], 'linear', true),
      spec(`${p}.experts.${e}.w2.weight`, [d, i], 'linear', true),
      spec(`${p}.experts.${e}.w3.weight`, [i, d], 'linear', true),
    );
  }
  if (c.numSharedExperts > 0) {
    // Engines size the shared MLP as shared_intermediate_size × n_shared_experts (§1.1).
    out.push(
      ...mlpTensors(`${p}.shared_experts`, d, c.sharedIntermediateSize * c.numSharedExperts),
    );
  }
  return out;
}
