import type { Backend } from '../backend/backend.js';
import { planAllReducePlacement, type AllReduceFusion } from '../parallel/allreduce-placement.js';
import { SingleRankCommunicator, type Communicator } from '../parallel/communicator.js';
import { validateLayout, type ParallelLayout } from '../parallel/parallel-layout.js';
import { AllReduceTrace, type AllReduceTraceOptions } from './minimax-m3/allreduce-trace.js';
import { MiniMaxM3Model } from './minimax-m3/minimax-m3-model.js';
import { loadModelWeights } from './minimax-m3/weights.js';
import { openCheckpoint } from './weights/checkpoint.js';

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
}

/** Opens a HuggingFace-layout checkpoint directory and loads this rank's share onto `backend`. */
export function loadModel(dir: string, o: LoadModelOptions): MiniMaxM3Model {
  const ckpt = openCheckpoint(dir);
  try {
    const comm = o.comm ?? new SingleRankCommunicator();
    const parallel = o.parallel ?? { tpRank: comm.rank, tpSize: comm.worldSize };
    validateLayout(ckpt.config, parallel);
    const weights = loadModelWeights(ckpt, o.backend, {
      parallel,
      fuseSharedExperts: o.fuseSharedExperts ?? false,
    });
    return new MiniMaxM3Model(ckpt.config, weights, o.backend, comm, {
      layout: parallel,
      placement: planAllReducePlacement(ckpt.config, parallel, o.allReduceFusion ?? 'dense'),
      trace: o.allReduceTrace && new AllReduceTrace(o.allReduceTrace, comm.rank),
    });
  } finally {
    ckpt.close();
  }
}
