import { Worker } from 'node:worker_threads';
import { readEnv } from '../../config/env.js';

/**
 * Last-resort teardown for a rank whose JavaScript thread is stuck in a blocking native call
 * (a device sync waiting on an NCCL kernel whose peer has died never returns, so the normal
 * failure handling — child 'exit' events, closed sockets, stdin — never runs). A separate
 * thread reads a heartbeat the main thread bumps every second; when the heartbeat is older
 * than `staleMs` and a watched process (a worker, or this rank's launcher) is gone, it
 * SIGKILLs the watched processes still alive and then this process, naming the cause.
 * The thread never keeps the process alive.
 */
const THREAD_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
const fs = require('node:fs');
const beat = new Int32Array(workerData.heartbeat);
const pids = new Set();
parentPort.on('message', (m) => (m.add ? pids.add(m.add) : pids.delete(m.remove)));
const alive = (pid) => {
  try {
    return !/^\\d+ \\(.*\\) Z/.test(fs.readFileSync('/proc/' + pid + '/stat', 'utf8'));
  } catch {
    return false;
  }
};
function tick() {
  const stale = Date.now() / 1000 - beat[0] > workerData.staleMs / 1000;
  const dead = [...pids].filter((p) => !alive(p));
  if (stale && dead.length > 0) {
    try {
      // stderr may be a pipe to the launcher that just died (EPIPE): never let that stop us.
      fs.writeSync(2, 'moeserve: ' + workerData.label + ': process ' + dead.join(', ') +
        ' is gone and this rank has been blocked for over ' + workerData.staleMs / 1000 +
        ' s (a collective waiting on it); killing the job\\n');
    } catch {}
    for (const p of pids) if (alive(p)) try { process.kill(p, 'SIGKILL'); } catch {}
    process.kill(process.pid, 'SIGKILL');
  }
  setTimeout(tick, 500);
}
tick();
`;

/** How long the main thread may be blocked before a lost peer ends the job (default 10 s). */
function defaultStaleMs(): number {
  const s = readEnv().hangWatchdogSeconds;
  return s !== undefined ? s * 1000 : 10_000;
}

export class HangWatchdog {
  private readonly beat = new Int32Array(new SharedArrayBuffer(4));
  private readonly thread: Worker;
  private readonly timer: NodeJS.Timeout;

  constructor(label: string, staleMs = defaultStaleMs()) {
    this.bump();
    this.thread = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: { heartbeat: this.beat.buffer, staleMs, label },
    });
    this.thread.unref();
    this.timer = setInterval(() => this.bump(), 1000);
    this.timer.unref();
  }

  /** Watch a process whose disappearance, while this thread is blocked, ends the job. */
  watch(pid: number): void {
    if (pid > 0) this.thread.postMessage({ add: pid });
  }

  unwatch(pid: number): void {
    this.thread.postMessage({ remove: pid });
  }

  stop(): void {
    clearInterval(this.timer);
    void this.thread.terminate();
  }

  private bump(): void {
    Atomics.store(this.beat, 0, Math.floor(Date.now() / 1000));
  }
}
