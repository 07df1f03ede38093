/**
 * A MiniMax-M3 model with the real dimensions (hidden 6144, 64/4 heads, 128 experts top-4,
 * expert width 3072, dense width 12288, vocab 200064), 3 dense + N MoE layers, with random
 * weights generated ON the GPU by the library's dummy loader (src/model/weights/dummy-source.ts:
 * hash-based fill, init-random's scales: 1/sqrt(fan_in) for linears, 1 for the embedding,
 * 0.05 for norms, 0.01 biases).
 *
 * The CPU reference gets the same (bf16-rounded) weights copied back from the GPU, except the
 * experts: a real MoE layer holds 4.8e9 expert parameters, more than one Float32Array can, so
 * LazyExpertCpuBackend fetches only the experts a step routes to, from the GPU copy.
 */
import type { Backend, ExpertWeights, MoeOptions } from '../../src/backend/backend.js';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import type { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import { parseModelConfig, type ModelConfig } from '../../src/config/model-config.js';
import {
  loadModelWeights,
  type MlpWeights,
  type ModelWeights,
} from '../../src/model/minimax-m3/weights.js';
import { DummyWeightSource } from '../../src/model/weights/dummy-source.js';
import { SINGLE_RANK } from '../../src/parallel/parallel-layout.js';
import { PRESETS, withNumLayers } from '../../src/model/weights/random-presets.js';
import type { DType } from '../../src/tensor/dtype.js';
import type { Shape } from '../../src/tensor/shape.js';
import { isFp8Weight } from '../../src/tensor/fp8-weight.js';
import type { Tensor } from '../../src/tensor/tensor.js';

export function realConfig(numMoeLayers: number): ModelConfig {
  return parseModelConfig(withNumLayers(PRESETS['minimax-m3']!(), 3 + numMoeLayers), 'real-dims');
}

/**
 * Builds every weight on the GPU with the library's dummy loader (`--load-format dummy`:
 * init-random's scales, hash fill on the device); `fuse` puts the shared expert in as expert id E.
 */
export async function buildGpuWeights(
  gpu: CudaBackend,
  cfg: ModelConfig,
  fuse: boolean,
  seed = 1,
): Promise<ModelWeights> {
  const src = new DummyWeightSource(cfg, gpu, seed);
  const w = loadModelWeights(src, gpu, { parallel: SINGLE_RANK, fuseSharedExperts: fuse });
  await src.load();
  return w;
}

/** Marks the experts of a CPU-side model as living on the GPU (fetched per step). */
class LazyExperts implements Tensor {
  readonly device = 'cpu' as const;
  constructor(
    readonly shape: Shape,
    readonly dtype: DType,
    readonly gpuTensor: Tensor,
  ) {}

  /** A marker only: the CPU reference fetches the GPU copy instead of reading this. */
  get storage(): never {
    throw new Error('LazyExperts: fetch the GPU copy (gpuTensor); the marker has no storage');
  }
}

/** The CPU reference, fetching routed experts' weights from the GPU copy on demand. */
export class LazyExpertCpuBackend extends CpuBackend {
  constructor(private readonly gpu: CudaBackend) {
    super();
  }

  override moe(
    out: Tensor,
    x: Tensor,
    ids: Tensor,
    weights: Tensor,
    ew: ExpertWeights,
    o: MoeOptions,
  ): void {
    if (!(ew.gateUp instanceof LazyExperts) || !(ew.down instanceof LazyExperts)) {
      super.moe(out, x, ids, weights, ew, o);
      return;
    }
    const idv = this.readI32(ids);
    const used = [
      ...new Set(
        Array.from(idv).filter(
          (e) => e >= ew.firstExpert && e < ew.firstExpert + ew.numLocalExperts,
        ),
      ),
    ].sort((a, b) => a - b);
    const local = new Map(used.map((e, j) => [e, j]));
    const [, I2, D] = ew.gateUp.shape as [number, number, number];
    const I = I2 / 2;
    const gu = new Float32Array(used.length * I2 * D);
    const dn = new Float32Array(used.length * D * I);
    used.forEach((e, j) => {
      const le = e - ew.firstExpert;
      gu.set(
        this.gpu.readF32(this.gpu.rows((ew.gateUp as LazyExperts).gpuTensor, le, 1)),
        j * I2 * D,
      );
      dn.set(this.gpu.readF32(this.gpu.rows((ew.down as LazyExperts).gpuTensor, le, 1)), j * D * I);
    });
    const remapped = Int32Array.from(idv, (e) => local.get(e) ?? -1);
    const compact: ExpertWeights = {
      gateUp: this.upload(gu, [used.length, I2, D], 'bf16'),
      down: this.upload(dn, [used.length, D, I], 'bf16'),
      firstExpert: 0,
      numLocalExperts: used.length,
    };
    const [g, d] = [(ew.gateUp as LazyExperts).gpuTensor, (ew.down as LazyExperts).gpuTensor];
    if (isFp8Weight(g)) this.markDequantizedFp8(compact.gateUp, g.scaling);
    if (isFp8Weight(d)) this.markDequantizedFp8(compact.down, d.scaling);
    super.moe(out, x, this.upload(remapped, ids.shape, 'i32'), weights, compact, o);
  }
}

/** Copies the GPU weights to `cpu` (experts stay on the GPU, see LazyExpertCpuBackend). */
export function mirrorWeights(gpu: CudaBackend, cpu: Backend, w: ModelWeights): ModelWeights {
  // FP8 weights arrive dequantized (code · scale, exact): the CPU computes on those values.
  const copy = (t: Tensor): Tensor => {
    const c = cpu.upload(gpu.readF32(t), t.shape, isFp8Weight(t) ? 'bf16' : t.dtype);
    if (isFp8Weight(t)) cpu.markDequantizedFp8!(c, t.scaling);
    return c;
  };
  const mlp = (m: MlpWeights | null): MlpWeights | null =>
    m ? { gateUp: copy(m.gateUp), down: copy(m.down) } : null;
  return {
    embed: copy(w.embed),
    norm: copy(w.norm),
    lmHead: copy(w.lmHead),
    layers: w.layers.map((l) => ({
      inputNorm: copy(l.inputNorm),
      postAttnNorm: copy(l.postAttnNorm),
      attn: {
        qProj: copy(l.attn.qProj),
        kProj: copy(l.attn.kProj),
        vProj: copy(l.attn.vProj),
        oProj: copy(l.attn.oProj),
        qNorm: copy(l.attn.qNorm),
        kNorm: copy(l.attn.kNorm),
        index: l.attn.index
          ? {
              qProj: copy(l.attn.index.qProj),
              kProj: copy(l.attn.index.kProj),
              qNorm: copy(l.attn.index.qNorm),
              kNorm: copy(l.attn.index.kNorm),
            }
          : null,
      },
      mlp: mlp(l.mlp),
      moe: l.moe
        ? {
            gate: copy(l.moe.gate),
            bias: l.moe.bias ? copy(l.moe.bias) : null,
            shared: mlp(l.moe.shared),
            experts: {
              ...l.moe.experts,
              gateUp: new LazyExperts(l.moe.experts.gateUp.shape, 'bf16', l.moe.experts.gateUp),
              down: new LazyExperts(l.moe.experts.down.shape, 'bf16', l.moe.experts.down),
            },
          }
        : null,
    })),
  };
}

/**
 * Bytes of weights one decode step reads at batch B (uniform routing): the roofline input.
 * `linearBytes` per parameter of the linears FP8 quantizes (2 for bf16; 1 + 4/128 for block
 * FP8: a code and a share of its row's f32 group scale); the LM head and MSA index
 * projections stay bf16, the router f32.
 */
export function decodeWeightBytes(
  cfg: ModelConfig,
  B: number,
  fuse: boolean,
  linearBytes = 2,
): { always: number; experts: number } {
  // --quantization fp8 quantizes the LM head with the linears.
  const { hiddenSize: D, headDim: Dh, numHeads: H, numKvHeads: Hkv, vocabSize: V } = cfg;
  const Di = cfg.sparse?.indexDim ?? 0;
  let always = V * D * linearBytes; // lm_head (the embedding reads only B rows)
  let experts = 0;
  const E = cfg.numExperts;
  const K = cfg.numExpertsPerTok;
  const expertParams = 3 * D * cfg.moeIntermediateSize;
  const u = E * (1 - (1 - K / E) ** B);
  for (let i = 0; i < cfg.numLayers; i++) {
    always += (2 * H * Dh + 2 * Hkv * Dh) * D * linearBytes;
    always += (cfg.sparseLayers[i] ? (Hkv * Di + Di) * D : 0) * 2;
    if (cfg.moeLayers[i]) {
      always += E * D * 4; // f32 router
      experts += (u + 1) * expertParams * linearBytes; // routed + shared
    } else {
      always += 3 * D * cfg.denseIntermediateSize * linearBytes;
    }
  }
  void fuse;
  return { always, experts };
}
