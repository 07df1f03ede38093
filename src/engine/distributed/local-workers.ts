import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FailureWatch } from './failure-watch.js';
import { HangWatchdog } from './hang-watchdog.js';
import { childEnv } from '../../config/env.js';

/** The node flags and entry script that run `moeserve` (default: this process's own). */
export interface WorkerEntry {
  readonly execArgv: readonly string[];
  readonly entry: string;
}

/** How to start `moeserve worker` for one rank of this host. */
export interface WorkerLaunch {
  readonly rank: number;
  /** Arguments after `moeserve worker`. */
  readonly args: readonly string[];
  /** Extra environment (CUDA_VISIBLE_DEVICES for GPU ranks). */
  readonly env?: Readonly<Record<string, string>>;
}

const KILL_GRACE_MS = 2000;
const STDERR_TAIL = 20;

/**
 * The worker processes of this host: one `moeserve worker` child per rank, started with the
 * same node binary, flags (e.g. `--import tsx`) and entry script as this process. Each child
 * keeps a stdin pipe from us and exits when it closes, so killing this process (even with
 * SIGKILL) takes the workers down. A child that exits before `shutdown()` is reported to the
 * watch with its exit status and last stderr line.
 */
export class LocalWorkers {
  private readonly children = new Map<number, ChildProcess>();
  private readonly tails = new Map<number, string[]>();
  private stopping = false;
  private watchdog: HangWatchdog | null = null;
  private heartbeats: string | null = null;

  constructor(
    private readonly watch: FailureWatch,
    private readonly log: (line: string) => void,
    private readonly run: WorkerEntry = {
      execArgv: process.execArgv,
      entry: process.argv[1] ?? '',
    },
    /** This process's rank when it is one (rank 0 launches the others). */
    private readonly selfRank?: number,
  ) {}

  start(w: WorkerLaunch): number {
    const { execArgv, entry } = this.run;
    if (!entry) throw new Error('cannot find the moeserve entry script to start workers');
    this.heartbeats ??= mkdtempSync(join(tmpdir(), 'moeserve-heartbeat-'));
    const beatFile = join(this.heartbeats, `rank${w.rank}`);
    const args = [...execArgv, entry, 'worker', ...w.args, '--heartbeat-file', beatFile];
    const child = spawn(process.execPath, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: childEnv(w.env),
    });
    const tail: string[] = [];
    this.tails.set(w.rank, tail);
    const relay = (chunk: Buffer): void => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        tail.push(line);
        if (tail.length > STDERR_TAIL) tail.shift();
        this.log(`[rank ${w.rank}] ${line}`);
      }
    };
    child.stdout?.on('data', relay);
    child.stderr?.on('data', relay);
    child.on('error', (e) => this.watch.report(w.rank, 'exit', `could not start: ${e.message}`));
    child.on('exit', (code, signal) => {
      this.children.delete(w.rank);
      if (this.stopping && code === 0) return;
      if (this.stopping && this.watch.failure) return;
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      const last = tail.filter((l) => !l.startsWith('    at ')).at(-1);
      this.watch.report(w.rank, 'exit', `${how}${last ? ` (${last})` : ''}`);
    });
    this.children.set(w.rank, child);
    this.hangWatchdog().watch(child.pid ?? -1, w.rank, beatFile);
    return child.pid ?? -1;
  }

  /** This process (rank 0) enters its next collective: published to the hang check. */
  collective(): void {
    this.watchdog?.collective(); // started with the first worker
  }

  /** This process (rank 0) starts or ends a kernel compile: the hang check excuses it. */
  compiling(on: boolean): void {
    this.watchdog?.compiling(on);
  }

  /** One watchdog for this host's workers: lost peers while blocked, and hung ranks. */
  private hangWatchdog(): HangWatchdog {
    return (this.watchdog ??= new HangWatchdog({
      label: 'launcher',
      checkHangs: true,
      ...(this.heartbeats && { heartbeatDir: this.heartbeats }),
      ...(this.selfRank !== undefined && { selfRank: this.selfRank }),
      onHung: (rank, seconds) =>
        this.watch.report(
          rank,
          'status',
          `blocked for over ${seconds} s in a step (no heartbeat); killed by the launcher's watchdog`,
        ),
    }));
  }

  get pids(): Map<number, number> {
    return new Map([...this.children].map(([r, c]) => [r, c.pid ?? -1]));
  }

  /** Waits for every child to exit by itself, then kills the rest after `timeoutMs`. */
  async shutdown(timeoutMs = 10_000): Promise<void> {
    this.stopping = true;
    const all = [...this.children.values()];
    await Promise.race([
      Promise.all(all.map(exited)),
      new Promise((r) => setTimeout(r, timeoutMs).unref()),
    ]);
    await this.kill();
  }

  /** SIGTERM to every child still running, SIGKILL after a grace period. */
  async kill(): Promise<void> {
    this.stopping = true;
    const all = [...this.children.values()];
    for (const c of all) {
      c.stdin?.destroy();
      c.kill('SIGTERM');
    }
    const timer = setTimeout(() => all.forEach((c) => c.kill('SIGKILL')), KILL_GRACE_MS);
    await Promise.all(all.map(exited));
    clearTimeout(timer);
    this.watchdog?.stop();
    this.watchdog = null;
    if (this.heartbeats) rmSync(this.heartbeats, { recursive: true, force: true });
    this.heartbeats = null;
  }
}

function exited(c: ChildProcess): Promise<void> {
  if (c.exitCode !== null || c.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => c.once('exit', () => resolve()));
}
