import { HangWatchdog } from '../engine/distributed/hang-watchdog.js';
import { runRankWorker } from '../engine/distributed/rank-worker.js';
import { formGroupAsWorker } from '../parallel/transport/process-group.js';
import { intOption, numberOption, requireString, UsageError, type Command } from './command.js';
import { injectedFault } from './parallel-options.js';

/**
 * `moeserve worker` (hidden): one rank of a multi-process job, started by the launcher of
 * `forward`/`generate`/`serve --tp N`. It joins the rendezvous, then does what rank 0's step
 * messages say. It exits when its launcher goes away (its stdin closes) or rank 0 does.
 */
export const workerCommand: Command = {
  name: 'worker',
  summary: '(internal) one rank of a --tp job, started by the launcher',
  usage: '--rank R --world-size W --master-addr HOST --master-port PORT',
  options: {
    rank: { type: 'string', description: 'global rank', valueName: 'R' },
    'world-size': { type: 'string', description: 'number of ranks', valueName: 'W' },
    'master-addr': { type: 'string', description: 'rank 0 host', valueName: 'HOST' },
    'master-port': { type: 'string', description: 'rendezvous port', valueName: 'PORT' },
    'bind-host': {
      type: 'string',
      default: '127.0.0.1',
      description: 'interface for the data listener',
      valueName: 'HOST',
    },
    'heartbeat-file': {
      type: 'string',
      description: "where this rank's watchdog publishes its heartbeat for the launcher",
      valueName: 'FILE',
    },
    'rendezvous-timeout': {
      type: 'string',
      default: '300',
      description: 'seconds to wait for the group to form',
      valueName: 'S',
    },
  },
  async run(values) {
    const rank = intOption(values, 'rank', -1);
    const worldSize = intOption(values, 'world-size', 0);
    if (rank < 1 || rank >= worldSize)
      throw new UsageError(`--rank must be in 1..${worldSize - 1} (rank 0 is the launcher)`);
    const beat = values['heartbeat-file'];
    const { unwatch, watchdog } = watchLauncher(rank, typeof beat === 'string' ? beat : undefined);
    try {
      const group = await formGroupAsWorker(rank, {
        worldSize,
        masterAddr: requireString(values, 'master-addr'),
        masterPort: intOption(values, 'master-port', 0),
        bindHost: String(values['bind-host']),
        timeoutMs: numberOption(values, 'rendezvous-timeout', 300) * 1000,
      });
      await runRankWorker(group, {
        fault: injectedFault(rank),
        entered: () => watchdog.collective(),
        compiling: (on) => watchdog.compiling(on),
      });
    } catch (e) {
      throw new Error(`rank ${rank}: ${(e as Error).message}`);
    } finally {
      unwatch();
    }
  },
};

/**
 * Exits when the launcher's end of our stdin closes (it exited or was killed); if this thread
 * is blocked when that happens, the hang watchdog kills the process instead.
 */
function watchLauncher(
  rank: number,
  heartbeatFile: string | undefined,
): { unwatch: () => void; watchdog: HangWatchdog } {
  const watchdog = new HangWatchdog({
    label: `rank ${rank}`,
    ...(heartbeatFile !== undefined && { heartbeatFile }),
  });
  watchdog.watch(process.ppid);
  const gone = (): void => {
    console.error(`moeserve: rank ${rank}: the launcher went away, exiting`);
    process.exit(1);
  };
  process.stdin.on('end', gone);
  process.stdin.on('error', gone);
  process.stdin.resume();
  const unwatch = (): void => {
    watchdog.stop();
    process.stdin.off('end', gone);
    process.stdin.off('error', gone);
    process.stdin.destroy();
  };
  return { unwatch, watchdog };
}
