import type { Backend } from '../../backend/backend.js';
import { createBackend } from '../../backend/create-backend.js';
import { loadModel } from '../../model/load-model.js';
import { StreamLoadProgress } from '../../model/weights/load-progress.js';
import type { MiniMaxM3Model } from '../../model/minimax-m3/minimax-m3-model.js';
import type { Communicator } from '../../parallel/communicator.js';
import { CpuCommunicator } from '../../parallel/cpu/cpu-communicator.js';
import { readEnv } from '../../config/env.js';
import { ProgressCommunicator } from '../../parallel/progress-communicator.js';
import { TimedCommunicator } from '../../parallel/timed-communicator.js';
import type { ProcessGroup } from '../../parallel/transport/process-group.js';
import type { RankSpec } from './step-messages.js';
import { ranksPerDevice } from './device-map.js';
import { runInitFault, type InjectedFault } from './fault-injection.js';

/**
 * A communicator this rank can close when the job ends: `close` after every rank's last
 * collective; `abort` (when it has one) after a failure, dropping pending work instead of
 * waiting for it (ncclCommDestroy on a collective a dead peer never joins never returns).
 */
export type ClosableCommunicator = Communicator & { close(): void; abort?(): void };

/**
 * Ends `comm` after a failure: its abort when it has one. `close` is not called: it may wait
 * for work a dead peer never joins (freeing memory a spinning kernel uses synchronizes), and
 * the process is about to exit, which releases the device and the sockets anyway.
 */
export function abortComm(comm: ClosableCommunicator): void {
  comm.abort?.();
}

/** One rank's loaded share of the model and its communicator. */
export interface RankRuntime {
  readonly model: MiniMaxM3Model;
  readonly comm: ClosableCommunicator;
}

/**
 * Builds this rank's backend and communicator (CPU over the group's TCP mesh, or NCCL from
 * the unique id rank 0 handed out in the rendezvous) and loads its slice of the checkpoint.
 */
export async function createRankRuntime(
  spec: RankSpec,
  group: ProcessGroup,
  fault?: InjectedFault,
  /** Called as this rank enters each collective (its hang watchdog's `collective`). */
  entered?: () => void,
  /** Called as a kernel compile starts and ends (its hang watchdog's `compiling`). */
  compiling?: (on: boolean) => void,
): Promise<RankRuntime> {
  const ordinal = spec.gpuIds?.[group.rank % spec.gpuIds.length];
  const backend = await createBackend(spec.backend, {
    cpuThreads: spec.cpuThreads,
    ...(spec.cpuKvCacheDtype && { cpuKvCacheDtype: spec.cpuKvCacheDtype }),
    ...(ordinal !== undefined && { deviceOrdinal: ordinal }),
    ...(compiling && { onCompile: compiling }),
  });
  runInitFault(fault); // test seam: a rank failing while the communicator is set up
  const made = await createCommunicator(spec, group, backend);
  const inner = entered ? new ProgressCommunicator(made, entered) : made;
  const comm = spec.profileComm ? new TimedCommunicator(inner, () => backend.synchronize()) : inner;
  const model = await loadModel(spec.modelDir, {
    backend,
    comm,
    parallel: { tpRank: group.rank, tpSize: spec.tp, ep: spec.ep, sp: spec.sp },
    allReduceFusion: spec.allReduceFusion,
    fuseSharedExperts: spec.fuseSharedExperts,
    allReduceTrace: spec.allReduceTrace,
    ...(spec.loadFormat && { loadFormat: spec.loadFormat }),
    quantization: spec.quantization ?? null,
    ...(spec.kvCacheDtype && { kvCacheDtype: spec.kvCacheDtype }),
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
      throw new Error('--comm cpu moves host tensors; with --backend cuda use --comm nccl or ipc');
    return new CpuCommunicator(group.rank, group.peers);
  }
  if (spec.comm === 'ipc') return createIpcCommunicator(spec, group, backend);
  // Loaded only when selected, so nothing else needs libnccl.
  const { createNcclCommunicator } = await import('../../parallel/nccl/nccl-communicator.js');
  return createNcclCommunicator(group.rank, group.worldSize, group.table.payload, backend);
}

/**
 * The largest collective input the IPC buffers take: a [T, D] float32 activation at the
 * step-size cap, rounded up. (Bigger inputs fail with an error naming maxBytes.)
 */
export const IPC_MAX_BYTES = 64 * 1024 * 1024;

async function createIpcCommunicator(
  spec: RankSpec,
  group: ProcessGroup,
  backend: Backend,
): Promise<ClosableCommunicator> {
  const ids = spec.gpuIds;
  if (!ids) throw new Error('--comm ipc needs the device map of --backend cuda');
  const { gemmRsMinRows } = readEnv();
  // Loaded only when selected, like NCCL.
  const { createCudaIpcCommunicator } =
    await import('../../parallel/cuda-ipc/cuda-ipc-communicator.js');
  return createCudaIpcCommunicator(group.rank, group.worldSize, group.peers, backend, {
    maxBytes: IPC_MAX_BYTES,
    ranksPerDevice: ranksPerDevice(ids, group.rank % ids.length),
    ...(gemmRsMinRows !== undefined && { gemmRsMinRows }),
  });
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
