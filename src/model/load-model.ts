import type { KvCacheDtype } from './minimax-m3/kv-cache.js';
import type { Backend } from '../backend/backend.js';
import { loadModelConfig, type ModelConfig } from '../config/model-config.js';
import { planAllReducePlacement, type AllReduceFusion } from '../parallel/allreduce-placement.js';
import { SingleRankCommunicator, type Communicator } from '../parallel/communicator.js';
import { validateLayout, type ParallelLayout } from '../parallel/parallel-layout.js';
import { AllReduceTrace, type AllReduceTraceOptions } from './minimax-m3/allreduce-trace.js';
import { readKvScales } from './minimax-m3/kv-scales.js';
import { MiniMaxM3Model } from './minimax-m3/minimax-m3-model.js';
import { quantizeModelWeights, type Quantization } from './minimax-m3/quantize-weights.js';
import { loadModelWeights, type ModelWeights } from './minimax-m3/weights.js';
import { openCheckpoint } from './weights/checkpoint.js';
import { CheckpointWeightSource } from './weights/checkpoint-source.js';
import { DummyWeightSource } from './weights/dummy-source.js';
import type { LoadProgress } from './weights/load-progress.js';
import type { LoadStats, WeightSource } from './weights/weight-source.js';

/** vLLM's `--load-format`: `auto` reads the safetensors checkpoint, `dummy` makes random weights. */
export const LOAD_FORMATS = ['auto', 'dummy'] as const;
export type LoadFormat = (typeof LOAD_FORMATS)[number];

export interface LoadModelOptions {
  readonly backend: Backend;
  readonly comm?: Communicator;
  /** This rank's layout; default: tp over the communicator's ranks. */
  readonly parallel?: ParallelLayout;
  readonly fuseSharedExperts?: boolean;
  /** Where FFN reductions go (seed 000); default `dense`. */
  readonly allReduceFusion?: AllReduceFusion;
  /** Fused-versus-native trace of every deferred reduction into `dir/rank<r>.jsonl`. */
  readonly allReduceTrace?: AllReduceTraceOptions;
  /** Default `auto`. `dummy` needs only `config.json` in the directory. */
  readonly loadFormat?: LoadFormat;
  /** Seed of the dummy weights (default 0). */
  readonly dummySeed?: number;
  /** Progress bar and summary line (the CLI passes one on stderr). */
  readonly progress?: LoadProgress;
  /** vLLM's `--quantization`: `fp8` quantizes a bf16 checkpoint's linears at load (default none). */
  readonly quantization?: Quantization | null;
  /** vLLM's `--kv-cache-dtype`, resolved (default bf16). */
  readonly kvCacheDtype?: KvCacheDtype;
}

export interface LoadedModel {
  readonly model: MiniMaxM3Model;
  readonly stats: LoadStats;
}

/** Opens a checkpoint directory (or only its config, for `dummy`) and loads this rank's share onto `backend`. */
export async function loadModelWithStats(dir: string, o: LoadModelOptions): Promise<LoadedModel> {
  const dummy = (o.loadFormat ?? 'auto') === 'dummy';
  const ckpt = dummy ? null : openCheckpoint(dir);
  try {
    const src: WeightSource = ckpt
      ? new CheckpointWeightSource(ckpt, o.backend)
      : new DummyWeightSource(loadModelConfig(dir), o.backend, o.dummySeed ?? 0);
    const config = src.config;
    const comm = o.comm ?? new SingleRankCommunicator();
    const parallel = o.parallel ?? { tpRank: comm.rank, tpSize: comm.worldSize };
    validateLayout(config, parallel);
    const loaded = loadModelWeights(src, o.backend, {
      parallel,
      fuseSharedExperts: o.fuseSharedExperts ?? false,
    });
    const stats = await src.load(o.progress);
    const weights = quantizeIfAsked(loaded, o, config.quantization.method);
    const model = new MiniMaxM3Model(config, weights, o.backend, comm, {
      layout: parallel,
      placement: planAllReducePlacement(config, parallel, o.allReduceFusion ?? 'dense'),
      trace: o.allReduceTrace && new AllReduceTrace(o.allReduceTrace, comm.rank),
      kvCacheDtype: o.kvCacheDtype ?? 'bf16',
      ...(ckpt &&
        o.kvCacheDtype === 'fp8_e4m3' && { kvScales: readKvScales(ckpt, config.numLayers) }),
    });
    return { model, stats };
  } finally {
    ckpt?.close();
  }
}

/**
 * `--quantization fp8` on a bf16 checkpoint quantizes it; a block-FP8 checkpoint already is
 * (served as stored); any other quantized checkpoint is a mismatch, as in vLLM.
 */
function quantizeIfAsked(
  w: ModelWeights,
  o: LoadModelOptions,
  stored: ModelConfig['quantization']['method'],
): ModelWeights {
  if (!o.quantization) return w;
  if (stored === 'fp8') return w;
  if (stored !== 'none')
    throw new Error(
      `--quantization ${o.quantization}: the checkpoint is already quantized (${stored}); leave the flag out to serve it as stored`,
    );
  return quantizeModelWeights(w, o.backend);
}

/** `loadModelWithStats` without the statistics. */
export async function loadModel(dir: string, o: LoadModelOptions): Promise<MiniMaxM3Model> {
  return (await loadModelWithStats(dir, o)).model;
}
