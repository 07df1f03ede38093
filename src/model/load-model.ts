import type { Backend } from '../backend/backend.js';
import { SingleRankCommunicator, type Communicator } from '../parallel/communicator.js';
import { SINGLE_RANK, type ParallelLayout } from '../parallel/parallel-layout.js';
import { MiniMaxM3Model } from './minimax-m3/minimax-m3-model.js';
import { loadModelWeights } from './minimax-m3/weights.js';
import { openCheckpoint } from './weights/checkpoint.js';

export interface LoadModelOptions {
  readonly backend: Backend;
  readonly comm?: Communicator;
  readonly parallel?: ParallelLayout;
  readonly fuseSharedExperts?: boolean;
}

/** Opens a HuggingFace-layout checkpoint directory and loads this rank's share onto `backend`. */
export function loadModel(dir: string, o: LoadModelOptions): MiniMaxM3Model {
  const ckpt = openCheckpoint(dir);
  try {
    const parallel = o.parallel ?? SINGLE_RANK;
    const weights = loadModelWeights(ckpt, o.backend, {
      parallel,
      fuseSharedExperts: o.fuseSharedExperts ?? false,
    });
    return new MiniMaxM3Model(
      ckpt.config,
      weights,
      o.backend,
      o.comm ?? new SingleRankCommunicator(),
    );
  } finally {
    ckpt.close();
  }
}
