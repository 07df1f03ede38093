import type { Backend, ExpertWeights } from '../../backend/backend.js';
import { BLOCK_FP8 } from '../../tensor/fp8-weight.js';
import type { Tensor } from '../../tensor/tensor.js';
import { quantizeDequantize } from '../weights/fp8-quantize.js';
import type { LayerWeights, MlpWeights, ModelWeights } from './weights.js';

/** vLLM's `--quantization`: `fp8` quantizes the linear weights of a bf16 checkpoint at load. */
export const QUANTIZATIONS = ['fp8'] as const;
export type Quantization = (typeof QUANTIZATIONS)[number];

/**
 * `--quantization fp8`: block FP8 (E4M3, 128 × 128 blocks per matrix, scale amax/448) of the
 * linears FP8 checkpoints quantize (attention q/k/v/o, dense MLPs, experts, shared expert),
 * plus the embedding table and the LM head (a tied head once): without them a shallow model's
 * FP8 weights stay above 0.55 of bf16 (the two are 2.46 GB each in MiniMax-M3); the lookup and
 * the head GEMM dequantize in the kernel. Not the norms, routers or MSA index projections.
 * Each matrix is quantized as the backend holds it (gate|up fused). A backend with `fp8` keeps codes and scales (the bf16
 * tensor is freed); the CPU computes on the dequantized values, code · scale, in place: what
 * the FP8 kernels are defined to compute.
 */
export function quantizeModelWeights(w: ModelWeights, backend: Backend): ModelWeights {
  const q = (t: Tensor): Tensor => quantizeTensor(t, backend);
  const mlp = (m: MlpWeights | null): MlpWeights | null =>
    m && { gateUp: q(m.gateUp), down: q(m.down) };
  const experts = (e: ExpertWeights): ExpertWeights => ({
    ...e,
    gateUp: q(e.gateUp),
    down: q(e.down),
  });
  const layer = (l: LayerWeights): LayerWeights => ({
    ...l,
    attn: {
      ...l.attn,
      qProj: q(l.attn.qProj),
      kProj: q(l.attn.kProj),
      vProj: q(l.attn.vProj),
      oProj: q(l.attn.oProj),
    },
    mlp: mlp(l.mlp),
    moe: l.moe && { ...l.moe, experts: experts(l.moe.experts), shared: mlp(l.moe.shared) },
  });
  const embed = q(w.embed);
  const lmHead = w.lmHead === w.embed ? embed : q(w.lmHead);
  return { ...w, embed, lmHead, layers: w.layers.map(layer) };
}

function quantizeTensor(t: Tensor, backend: Backend): Tensor {
  if (backend.fp8) {
    const f = backend.fp8.quantize(t);
    backend.free(t);
    return f;
  }
  const [rows, cols] = t.shape.slice(-2) as [number, number];
  backend.write(t, quantizeDequantize(backend.readF32(t), rows, cols));
  backend.markDequantizedFp8?.(t, BLOCK_FP8);
  return t;
}
