import type { KvCacheDtype } from '../model/minimax-m3/kv-cache.js';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import type { ForwardModel } from '../model/forward-model.js';
import { loadModel, type LoadFormat } from '../model/load-model.js';
import type { Quantization } from '../model/minimax-m3/quantize-weights.js';
import { stderrLoadProgress } from './load-options.js';
import { cpuKvCacheDtypeOption } from './kv-cache-options.js';
import { createBackend, cudaDeviceCount } from '../backend/create-backend.js';
import {
  ALLREDUCE_FUSION_MODES,
  formatPlacementTable,
  parseAllReduceFusion,
} from '../parallel/allreduce-placement.js';
import {
  launchRankGroup,
  superviseNode,
  type LaunchOptions,
} from '../engine/distributed/launch-group.js';
import type { RankGroupDriver } from '../engine/distributed/rank-group-driver.js';
import type { InjectedFault } from '../engine/distributed/fault-injection.js';
import type { RankSpec } from '../engine/distributed/step-messages.js';
import { M3ModelRunner, type M3RunnerOptions } from '../engine/m3-model-runner.js';
import { parseReductionVariant, REDUCTION_VARIANTS } from '../parallel/reduction-semantics.js';
import { intOption, numberOption, UsageError, type OptionSpec } from './command.js';
import { readEnv } from '../config/env.js';
import {
  checkDeviceCount,
  parseGpuIds,
  resolveDeviceMap,
  type DeviceMap,
} from '../engine/distributed/device-map.js';

/** The parallel-layout and launch flags every model command takes (torchrun's names). */
export const PARALLEL_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  tp: {
    type: 'string',
    default: '1',
    description: 'tensor-parallel ranks (processes)',
    valueName: 'N',
  },
  ep: { type: 'boolean', description: 'expert parallelism: whole experts split over the ranks' },
  sp: { type: 'boolean', description: 'sequence parallelism: residual stream sharded by token' },
  'allreduce-fusion': {
    type: 'string',
    default: 'dense',
    description: `defer FFN all-reduces into the next norm: ${ALLREDUCE_FUSION_MODES.join('|')}`,
    valueName: 'MODE',
  },
  'allreduce-trace': {
    type: 'string',
    description:
      'at every deferred reduction run fused and native paths and write DIR/rank<r>.jsonl',
    valueName: 'DIR',
  },
  'allreduce-trace-variant': {
    type: 'string',
    default: 'exact',
    description: `fused arithmetic the trace checks (measurement only): ${REDUCTION_VARIANTS.join('|')}`,
    valueName: 'V',
  },
  'cpu-threads': {
    type: 'string',
    description:
      'threads of the CPU backend (default: the available cores, shared among the --tp ranks)',
    valueName: 'N',
  },
  comm: {
    type: 'string',
    description:
      'communicator: cpu, nccl or ipc (default: cpu on the CPU backend; on CUDA nccl, or ipc when ranks share a GPU)',
    valueName: 'C',
  },
  'gpu-ids': {
    type: 'string',
    description:
      'device ordinal of each rank of this host, e.g. 0,0,0,0 for four ranks on one GPU (default: one GPU per rank)',
    valueName: 'IDS',
  },
  nnodes: { type: 'string', default: '1', description: 'hosts in the job', valueName: 'N' },
  'node-rank': {
    type: 'string',
    default: '0',
    description: 'this host (0 runs rank 0)',
    valueName: 'K',
  },
  'master-addr': {
    type: 'string',
    default: '127.0.0.1',
    description: 'address of host 0 for the rendezvous',
    valueName: 'HOST',
  },
  'master-port': {
    type: 'string',
    default: '0',
    description: 'rendezvous port (0: pick one; one host only)',
    valueName: 'PORT',
  },
  'rendezvous-timeout': {
    type: 'string',
    default: '300',
    description: 'seconds to wait for every rank to join',
    valueName: 'S',
  },
};

export interface ModelCommandOptions {
  readonly modelDir: string;
  readonly backend: string;
  readonly fuseSharedExperts: boolean;
  readonly loadFormat?: LoadFormat;
  readonly quantization?: Quantization | null;
  readonly kvCacheDtype?: KvCacheDtype;
}

/** A model for one rank or, with --tp > 1, rank 0 of a launched group; `close` ends it. */
export interface OpenedModel {
  readonly model: ForwardModel;
  close(): Promise<void>;
  /** After an error: kill every rank (no-op on one rank). */
  abort(): Promise<void>;
}

/** --cpu-threads, or the available cores divided among `tp` ranks (at least 1). */
export function cpuThreadsFrom(values: Record<string, unknown>, tp: number): number {
  const n = intOption(values, 'cpu-threads', Math.max(1, Math.floor(availableParallelism() / tp)));
  if (n < 1 || n > 256) throw new UsageError('--cpu-threads must be in 1..256');
  return n;
}

export function rankSpecFrom(values: Record<string, unknown>, m: ModelCommandOptions): RankSpec {
  const tp = intOption(values, 'tp', 1);
  if (tp < 1) throw new UsageError('--tp must be at least 1');
  let allReduceFusion;
  let variant;
  let devices;
  try {
    devices = deviceMapFrom(values, m.backend, tp);
    allReduceFusion = parseAllReduceFusion(String(values['allreduce-fusion'] ?? 'dense'));
    variant = parseReductionVariant(String(values['allreduce-trace-variant'] ?? 'exact'));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const traceDir = values['allreduce-trace'];
  return {
    modelDir: m.modelDir,
    backend: m.backend,
    comm: devices.comm,
    ...(devices.gpuIds && { gpuIds: devices.gpuIds }),
    tp,
    ep: values['ep'] === true,
    sp: values['sp'] === true,
    allReduceFusion,
    fuseSharedExperts: m.fuseSharedExperts,
    ...(m.loadFormat && { loadFormat: m.loadFormat }),
    quantization: m.quantization ?? null,
    ...(m.kvCacheDtype && { kvCacheDtype: m.kvCacheDtype }),
    cpuThreads: cpuThreadsFrom(values, tp),
    cpuKvCacheDtype: cpuKvCacheDtypeOption(values),
    ...(typeof traceDir === 'string' && traceDir !== ''
      ? { allReduceTrace: { dir: resolve(traceDir), variant } }
      : {}),
  };
}

/** --gpu-ids and --comm for `tp` ranks spread over --nnodes hosts. */
function deviceMapFrom(values: Record<string, unknown>, backend: string, tp: number): DeviceMap {
  const nnodes = intOption(values, 'nnodes', 1);
  const ids = values['gpu-ids'];
  const comm = values['comm'];
  return resolveDeviceMap({
    backend,
    localRanks: nnodes > 0 && tp % nnodes === 0 ? tp / nnodes : tp,
    nnodes,
    ep: values['ep'] === true,
    ...(typeof ids === 'string' && { gpuIds: parseGpuIds(ids) }),
    ...(typeof comm === 'string' && { comm }),
  });
}

/** CUDA: every ordinal of the device map names a GPU of this host (before any rank starts). */
async function checkDevices(values: Record<string, unknown>, spec: RankSpec): Promise<void> {
  if (!spec.gpuIds) return;
  const count = await cudaDeviceCount();
  try {
    checkDeviceCount(spec.gpuIds, count, typeof values['gpu-ids'] === 'string');
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

/**
 * MOESERVE_FAULT_INJECT="rank=R,step=S[,mode=throw|block|exit][,at=init]" (tests): rank R
 * throws at, blocks its thread forever in, or exits in forward step S (with at=init: while it
 * sets up its backend and communicator).
 */
export function injectedFault(rank: number): InjectedFault | undefined {
  const spec = readEnv().faultInject;
  if (!spec) return undefined;
  const kv = Object.fromEntries(spec.split(',').map((p) => p.split('=') as [string, string]));
  if (Number(kv['rank']) !== rank) return undefined;
  const mode = kv['mode'] === 'block' || kv['mode'] === 'exit' ? kv['mode'] : 'throw';
  return { step: Number(kv['step'] ?? 0), mode, ...(kv['at'] === 'init' && { at: 'init' }) };
}

/** The launch half of the flags (hosts, rendezvous) for a --tp > 1 spec. */
export function launchOptionsFrom(
  values: Record<string, unknown>,
  spec: RankSpec,
  log: (line: string) => void,
): LaunchOptions {
  const nnodes = intOption(values, 'nnodes', 1);
  const nodeRank = intOption(values, 'node-rank', 0);
  if (nnodes < 1 || nodeRank < 0 || nodeRank >= nnodes)
    throw new UsageError(`--node-rank must be in 0..${nnodes - 1}`);
  return {
    spec,
    nnodes,
    nodeRank,
    masterAddr: String(values['master-addr'] ?? '127.0.0.1'),
    masterPort: intOption(values, 'master-port', 0),
    rendezvousTimeoutMs: numberOption(values, 'rendezvous-timeout', 300) * 1000,
    log,
    fault: injectedFault(0),
  };
}

/**
 * Opens the model the flags describe. On a host other than 0 (--node-rank > 0) there is no
 * model here: this host's ranks are started and supervised, and null is returned once they
 * have exited.
 */
export async function openModel(
  values: Record<string, unknown>,
  m: ModelCommandOptions,
): Promise<OpenedModel | null> {
  const spec = rankSpecFrom(values, m);
  await checkDevices(values, spec);
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  if (spec.allReduceTrace)
    log(
      spec.tp === 1
        ? 'allreduce trace: one rank has no reduction to trace; the trace stays empty'
        : `allreduce trace (${spec.allReduceTrace.variant}) into ${spec.allReduceTrace.dir}/rank<r>.jsonl`,
    );
  if (spec.tp === 1) {
    const model = await loadModel(spec.modelDir, {
      backend: await createBackend(spec.backend, {
        cpuThreads: spec.cpuThreads,
        ...(spec.cpuKvCacheDtype && { cpuKvCacheDtype: spec.cpuKvCacheDtype }),
        ...(spec.gpuIds && { deviceOrdinal: spec.gpuIds[0] }),
      }),
      fuseSharedExperts: spec.fuseSharedExperts,
      allReduceFusion: spec.allReduceFusion,
      allReduceTrace: spec.allReduceTrace,
      ...(spec.loadFormat && { loadFormat: spec.loadFormat }),
      quantization: spec.quantization ?? null,
      ...(spec.kvCacheDtype && { kvCacheDtype: spec.kvCacheDtype }),
      progress: stderrLoadProgress(),
    });
    return { model, close: async () => {}, abort: async () => {} };
  }
  const launch = launchOptionsFrom(values, spec, log);
  if (launch.nodeRank > 0) {
    await superviseNode(launch);
    return null;
  }
  const driver = await launchRankGroup(launch);
  log(formatPlacementTable(driver.model.placement, driver.model.layout, spec.allReduceFusion));
  return { model: driver, close: () => driver.close(), abort: () => driver.abort() };
}

/**
 * For `serve --tp N`: null when tp = 1 (build the single-rank runner as usual); 'other-host'
 * when this host only ran worker ranks (they have exited); else the engine runner of the
 * group rank 0 leads (the same M3ModelRunner as one rank) and the group, whose `failed`
 * and `abort` the server watches, with the placement table printed.
 */
export async function openDistributedRunner(
  values: Record<string, unknown>,
  m: ModelCommandOptions,
  o: M3RunnerOptions = {},
): Promise<{ runner: M3ModelRunner; group: RankGroupDriver } | 'other-host' | null> {
  const spec = rankSpecFrom(values, m);
  if (spec.tp === 1) return null;
  await checkDevices(values, spec);
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  const launch = launchOptionsFrom(values, spec, log);
  if (launch.nodeRank > 0) {
    await superviseNode(launch);
    return 'other-host';
  }
  const driver = await launchRankGroup(launch);
  log(formatPlacementTable(driver.model.placement, driver.model.layout, spec.allReduceFusion));
  try {
    return { runner: new M3ModelRunner(driver, o), group: driver };
  } catch (e) {
    await driver.abort();
    throw e;
  }
}

/** Runs `fn` on the opened model, closing the group afterwards (and killing it on error). */
export async function withModel(
  opened: OpenedModel,
  fn: (model: ForwardModel) => Promise<void>,
): Promise<void> {
  try {
    await fn(opened.model);
  } catch (e) {
    await opened.abort();
    throw e;
  }
  await opened.close();
}
