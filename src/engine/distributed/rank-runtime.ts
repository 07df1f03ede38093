import type { Backend } from '../../backend/backend.js';
import { createBackend } from '../../backend/create-backend.js';
import { loadModel } from '../../model/load-model.js';
import { StreamLoadProgress } from '../../model/weights/load-progress.js';
import type { MiniMaxM3Model } from '../../model/minimax-m3/minimax-m3-model.js';
import type { Communicator } from '../../parallel/communicator.js';
import { CpuCommunicator } from '../../parallel/cpu/cpu-communicator.js';
import { TimedCommunicator } from '../../parallel/timed-communicator.js';
import type { ProcessGroup } from '../../parallel/transport/process-group.js';
import type { RankSpec } from './step-messages.js';

/** A communicator this rank can close when the job ends. */
export type ClosableCommunicator = Communicator & { close(): void };

/** One rank's loaded share of the model and its communicator. */
export interface RankRuntime {
  readonly model: MiniMaxM3Model;
  readonly comm: ClosableCommunicator;
}

/**
 * Builds this rank's backend and communicator (CPU over the group's TCP mesh, or NCCL from
 * the unique id rank 0 handed out in the rendezvous) and loads its slice of the checkpoint.
 */
export async function createRankRuntime(spec: RankSpec, group: ProcessGroup): Promise<RankRuntime> {
  const backend = await createBackend(spec.backend, { cpuThreads: spec.cpuThreads });
  const inner = await createCommunicator(spec, group, backend);
  const comm = spec.profileComm ? new TimedCommunicator(inner, () => backend.synchronize()) : inner;
  const model = await loadModel(spec.modelDir, {
    backend,
    comm,
    parallel: { tpRank: group.rank, tpSize: spec.tp, ep: spec.ep, sp: spec.sp },
    allReduceFusion: spec.allReduceFusion,
    fuseSharedExperts: spec.fuseSharedExperts,
    allReduceTrace: spec.allReduceTrace,
    ...(spec.loadFormat && { loadFormat: spec.loadFormat }),
    // Every rank loads its own slice; rank 0 shows the progress for the group.
    ...(group.rank === 0 && { progress: new StreamLoadProgress(process.stderr) }),
  });
  return { model, comm };
}

async function createCommunicator(
  spec: RankSpec,
  group: ProcessGroup,
  backend: Backend,
): Promise<ClosableCommunicator> {
  if (group.worldSize !== spec.tp)
    throw new Error(`the group has ${group.worldSize} ranks, the layout needs tp=${spec.tp}`);
  if (spec.comm === 'cpu') {
    if (backend.memory !== 'host')
      throw new Error('--comm cpu moves CPU tensors; use --comm nccl on GPUs');
    return new CpuCommunicator(group.rank, group.peers);
  }
  // Loaded only when selected, so nothing else needs libnccl.
  const { createNcclCommunicator } = await import('../../parallel/nccl/nccl-communicator.js');
  return createNcclCommunicator(group.rank, group.worldSize, group.table.payload, backend);
}

/** The all-reduce microbenchmark every rank runs in lockstep; returns ms per all-reduce. */
export async function allReduceLoop(
  rt: RankRuntime,
  m: { elems: number; dtype: 'bf16' | 'f32'; warmup: number; iters: number },
): Promise<number> {
  const b = rt.model.backend;
  const t = b.alloc([m.elems], m.dtype);
  try {
    for (let i = 0; i < m.warmup; i++) await rt.comm.allReduce(t);
    b.synchronize();
    const start = performance.now();
    for (let i = 0; i < m.iters; i++) await rt.comm.allReduce(t);
    b.synchronize();
    return (performance.now() - start) / m.iters;
  } finally {
    b.free(t);
  }
}

/** Rank 0, before the rendezvous: the NCCL unique id to hand out, or nothing. */
export async function rendezvousPayload(spec: RankSpec): Promise<Uint8Array> {
  if (spec.comm !== 'nccl') return new Uint8Array(0);
  const { ncclUniqueId } = await import('../../parallel/nccl/nccl-communicator.js');
  return ncclUniqueId();
}
