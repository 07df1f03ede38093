import {
  closeGroup,
  formGroupAsRank0,
  openMaster,
  type GroupConfig,
  type ProcessGroup,
} from '../../parallel/transport/process-group.js';
import { CONTROL } from '../../parallel/transport/rendezvous.js';
import { FailureWatch } from './failure-watch.js';
import { LocalWorkers, type WorkerEntry } from './local-workers.js';
import { RankGroupDriver, watchControl } from './rank-group-driver.js';
import { createRankRuntime, rendezvousPayload } from './rank-runtime.js';
import { withInjectedFault, type InjectedFault } from './fault-injection.js';
import { encodeStep, type RankSpec } from './step-messages.js';

/** torchrun-style placement of the ranks over hosts. */
export interface LaunchOptions {
  readonly spec: RankSpec;
  readonly nnodes: number;
  readonly nodeRank: number;
  readonly masterAddr: string;
  /** 0 picks a free port (one host only). */
  readonly masterPort: number;
  readonly rendezvousTimeoutMs: number;
  /** Where progress and the workers' stderr go. */
  readonly log: (line: string) => void;
  /** Extra environment for the workers (tests inject faults with it). */
  readonly workerEnv?: Readonly<Record<string, string>>;
  /** How to run `moeserve` for the workers; default: as this process was run. */
  readonly workerEntry?: WorkerEntry;
  /** Test seam (withInjectedFault) for rank 0's own forward steps. */
  readonly fault?: InjectedFault;
}

/** The global ranks host `nodeRank` runs. */
export function ranksOfNode(o: Pick<LaunchOptions, 'spec' | 'nnodes' | 'nodeRank'>): number[] {
  const W = o.spec.tp;
  if (W % o.nnodes !== 0) throw new Error(`tp=${W} is not divisible by --nnodes ${o.nnodes}`);
  const perNode = W / o.nnodes;
  return Array.from({ length: perNode }, (_, i) => o.nodeRank * perNode + i);
}

/**
 * Rank 0 on host 0: opens the rendezvous, starts this host's other ranks as `moeserve worker`
 * processes, forms the group (handing out the NCCL unique id when NCCL is used), tells every
 * rank to load its shard, loads its own, and returns the driver once all are ready. Any rank
 * failing on the way fails this call with that rank's error, after killing this host's ranks.
 */
export async function launchRankGroup(o: LaunchOptions): Promise<RankGroupDriver> {
  const watch = new FailureWatch();
  const workers = new LocalWorkers(watch, o.log, o.workerEntry, 0);
  const cfg = groupConfig(o);
  const master = await openMaster(cfg);
  const port = master.port;
  let group: ProcessGroup | null = null;
  try {
    for (const rank of ranksOfNode(o).slice(1)) workers.start(workerLaunch(o, rank, port));
    const payload = await rendezvousPayload(o.spec);
    group = await watch.race(formGroupAsRank0(master, { ...cfg, masterPort: port }, payload));
    const ready = watchControl(group.control, watch);
    const init = encodeStep({ kind: 'init', spec: o.spec });
    for (const c of group.control) c?.send(CONTROL.step, 0, init);
    const rt = await watch.race(
      createRankRuntime(
        o.spec,
        group,
        o.fault,
        () => workers.collective(),
        (on) => workers.compiling(on),
      ),
    );
    await watch.race(ready);
    const pids = [...workers.pids].map(([r, pid]) => `rank ${r} pid ${pid}`);
    o.log(`ranks ready: rank 0 pid ${process.pid}${pids.length ? `, ${pids.join(', ')}` : ''}`);
    return new RankGroupDriver(
      withInjectedFault(rt.model, o.fault),
      rt.comm,
      group,
      watch,
      workers,
    );
  } catch (e) {
    const err = await watch.explain(e);
    watch.stop();
    master.close();
    if (group) closeGroup(group);
    await workers.kill();
    throw err;
  }
}

/**
 * Any host but the first: starts its ranks and waits for them. They meet rank 0 at the
 * master address; when one of them fails, the others on this host are killed and this
 * rejects with the failure.
 */
export async function superviseNode(o: LaunchOptions): Promise<void> {
  const watch = new FailureWatch();
  const workers = new LocalWorkers(watch, o.log, o.workerEntry);
  const ranks = ranksOfNode(o);
  for (const rank of ranks) workers.start(workerLaunch(o, rank, o.masterPort));
  o.log(`node ${o.nodeRank}: ranks ${ranks.join(', ')} started`);
  try {
    await watch.race(workers.shutdown(0x7fffffff));
  } catch (e) {
    watch.stop();
    await workers.kill();
    throw e;
  }
}

function groupConfig(o: LaunchOptions): GroupConfig {
  if (o.nnodes > 1 && o.masterPort === 0)
    throw new Error('--master-port is needed when the job spans several hosts');
  return {
    worldSize: o.spec.tp,
    masterAddr: o.masterAddr,
    masterPort: o.masterPort,
    bindHost: o.nnodes > 1 ? '0.0.0.0' : '127.0.0.1',
    timeoutMs: o.rendezvousTimeoutMs,
  };
}

function workerLaunch(o: LaunchOptions, rank: number, port: number) {
  const cfg = groupConfig(o);
  const args = [
    '--rank',
    String(rank),
    '--world-size',
    String(o.spec.tp),
    '--master-addr',
    o.masterAddr,
    '--master-port',
    String(port),
    '--bind-host',
    cfg.bindHost,
    '--rendezvous-timeout',
    String(o.rendezvousTimeoutMs / 1000),
  ];
  // Every rank sees this host's GPUs and opens the ordinal of the device map (spec.gpuIds),
  // so ranks that share a GPU share a device ordinal and can open each other's IPC handles.
  return { rank, args, env: { ...o.workerEnv } };
}
