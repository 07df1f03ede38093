import {
  closeGroup,
  formGroupAsRank0,
  formGroupAsWorker,
  openMaster,
  type GroupConfig,
  type ProcessGroup,
} from '../transport/process-group.js';
import { CpuCommunicator, type CpuCommunicatorOptions } from './cpu-communicator.js';

/**
 * W ranks inside this process, joined over real localhost TCP exactly as separate processes
 * would be. The ranks' work interleaves at collective awaits; used by tests and CPU benches.
 */
export async function connectLocalGroup(
  worldSize: number,
  o: CpuCommunicatorOptions = {},
): Promise<{ comms: CpuCommunicator[]; close: () => void }> {
  const base: GroupConfig = {
    worldSize,
    masterAddr: '127.0.0.1',
    masterPort: 0,
    bindHost: '127.0.0.1',
    timeoutMs: 30_000,
  };
  const master = await openMaster(base);
  const cfg = { ...base, masterPort: master.port };
  const groups: ProcessGroup[] = await Promise.all([
    formGroupAsRank0(master, cfg),
    ...Array.from({ length: worldSize - 1 }, (_, i) => formGroupAsWorker(i + 1, cfg)),
  ]);
  const comms = groups.map((g) => new CpuCommunicator(g.rank, g.peers, o));
  return { comms, close: () => groups.forEach(closeGroup) };
}
