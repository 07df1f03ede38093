import { Worker } from 'node:worker_threads';
import { readEnv } from '../../config/env.js';

/**
 * Teardown that does not need the main thread: a rank's JavaScript thread can be stuck in a
 * blocking native call (a device sync on a collective whose peer died or spins never
 * returns), and then child 'exit' events, closed sockets and stdin are never handled. A
 * separate thread reads a heartbeat the main thread bumps every 250 ms and:
 *
 * - publishes it to `heartbeatFile` (a worker rank: its launcher reads it);
 * - **lost peer**: when this thread is blocked for over `staleMs` and a watched process is
 *   gone, SIGKILLs the watched processes still alive and this one, naming the gone rank;
 * - **hung rank** (launchers only, `checkHangs`): when a watched rank's published heartbeat,
 *   or this process's own (with `selfRank`), is older than `2 · staleMs`, the cause is chosen
 *   by `pickHungRank`; time while any rank compiles kernels (`compiling()`) does not count. If it is a worker and this thread is still responsive, that worker is SIGKILLed
 *   and `onHung` tells the main thread (which ends the group in order, naming it); otherwise
 *   every process is SIGKILLed here, with one line naming the rank.
 *
 * The thread never keeps the process alive.
 */
/** A rank as the hang check sees it: its heartbeat's last beat and the collectives it entered. */
export interface RankBeat {
  readonly pid: number;
  readonly rank?: number;
  /** Date.now() of its last heartbeat. */
  readonly since: number;
  /** Collectives it had entered by then. */
  readonly entered: number;
  /** This process (the launcher that is itself a rank). */
  readonly self?: boolean;
}

/**
 * The rank to blame for a hang, or undefined while there is none. A hang is a heartbeat older
 * than 2 · staleMs. The blame goes to the rank behind the others, the one that entered the
 * fewest collectives (its peers are waiting in the next one), among equals the one that
 * stopped first; it is chosen among every rank silent for over staleMs, not only those past
 * 2 · staleMs: the peers waiting on a hung rank stop a moment after it or before it (rank 0
 * blocks in its device sync as soon as it has queued the step that the hung worker never
 * starts), so the first rank past the limit is often a waiting one, not the cause.
 * Runs inside the watchdog thread (its source is inlined there): plain JavaScript, no imports.
 */
export function pickHungRank<B extends RankBeat>(
  beats: readonly B[],
  now: number,
  staleMs: number,
): B | undefined {
  if (!beats.some((b) => now - b.since > 2 * staleMs)) return undefined;
  const behind = beats.filter((b) => now - b.since > staleMs);
  behind.sort((a, b) => a.entered - b.entered || a.since - b.since);
  return behind[0];
}

/** A rank compiling for longer than this (one NVRTC call never takes minutes) counts as blocked. */
export const MAX_COMPILE_MS = 300_000;

/**
 * The beats as the hang check must read them while kernels compile: a rank compiling
 * (NVRTC blocks its main thread for seconds per kernel on a cold cache, longer for the whole
 * first steps) is not hung, and neither are its peers, blocked in a device sync or a collective
 * waiting for it. So no beat counts as older than the last moment any rank was compiling
 * (`lastCompileAt`, which the caller advances to `now` while one is). Plain JavaScript: the
 * watchdog thread inlines its source.
 */
export function excuseCompiles<B extends RankBeat>(
  beats: readonly B[],
  lastCompileAt: number,
): B[] {
  return beats.map((b) => (b.since >= lastCompileAt ? b : { ...b, since: lastCompileAt }));
}

const THREAD_SOURCE = `
const { workerData: w, parentPort } = require('node:worker_threads');
const pickHungRank = ${pickHungRank.toString()};
const excuseCompiles = ${excuseCompiles.toString()};
const MAX_COMPILE_MS = ${MAX_COMPILE_MS};
let lastCompileAt = 0;
const fs = require('node:fs');
const beat = new Float64Array(w.heartbeat);
const peers = new Map();
const reported = new Set();
parentPort.on('message', (m) => (m.add ? peers.set(m.add.pid, m.add) : peers.delete(m.remove)));
const out = w.heartbeatFile ? fs.openSync(w.heartbeatFile, 'w') : null;
const alive = (pid) => {
  try {
    return !/^\\d+ \\(.*\\) Z/.test(fs.readFileSync('/proc/' + pid + '/stat', 'utf8'));
  } catch {
    return false;
  }
};
// A worker's file: "<last beat ms> <collectives entered> <compiling since ms, 0 when not>".
const published = (p) => {
  if (!p.file) return undefined;
  try {
    const [t, n, c] = fs.readFileSync(p.file, 'utf8').trim().split(/\\s+/).map(Number);
    return t > 0 ? { t, n: n || 0, c: c || 0 } : undefined;
  } catch {
    return undefined;
  }
};
const name = (p) => (p.rank !== undefined ? 'rank ' + p.rank + ' (pid ' + p.pid + ')' : 'process ' + p.pid);
const say = (line) => {
  // stderr may be a pipe to a launcher that just died (EPIPE): never let that stop us.
  try { fs.writeSync(2, 'moeserve: ' + w.label + ': ' + line + '; ending the job\\n'); } catch {}
};
const killAll = () => {
  for (const p of peers.keys()) if (alive(p)) try { process.kill(p, 'SIGKILL'); } catch {}
  // Nothing runs after our own SIGKILL: remove the heartbeat files now.
  if (w.heartbeatDir) try { fs.rmSync(w.heartbeatDir, { recursive: true, force: true }); } catch {}
  process.kill(process.pid, 'SIGKILL');
};
const secs = (ms) => ms / 1000 + ' s';
const compilingNow = (since, now) => since > 0 && now - since < MAX_COMPILE_MS;
function tick() {
  const now = Date.now();
  const selfCompiling = compilingNow(beat[2], now);
  const own = selfCompiling ? 0 : now - beat[0];
  if (out !== null) try { fs.writeSync(out, (beat[0] + ' ' + beat[1] + ' ' + beat[2]).padStart(60, ' '), 0); } catch {}
  const dead = [...peers.values()].filter((p) => !alive(p.pid));
  if (own > w.staleMs && dead.length > 0) {
    say(dead.map(name).join(', ') + ' is gone and this rank has been blocked for over ' +
      secs(w.staleMs) + ' (a collective waiting on it)');
    killAll();
  }
  if (w.checkHangs) {
    const states = [];
    let compiling = selfCompiling;
    for (const p of peers.values()) {
      const b = published(p);
      if (b === undefined || !alive(p.pid)) continue;
      states.push({ ...p, since: b.t, entered: b.n });
      compiling = compiling || compilingNow(b.c, now);
    }
    if (w.selfRank !== undefined) states.push({ pid: process.pid, rank: w.selfRank, since: beat[0], entered: beat[1], self: true });
    if (compiling) lastCompileAt = now;
    const first = pickHungRank(excuseCompiles(states, lastCompileAt), now, w.staleMs);
    const ownQuiet = selfCompiling ? 0 : now - Math.max(beat[0], lastCompileAt);
    if (first && (first.self || ownQuiet > w.staleMs)) {
      say(name(first) + ' has been blocked for over ' + secs(2 * w.staleMs) + ' (a step that never returns)');
      killAll();
    } else if (first && !reported.has(first.pid)) {
      reported.add(first.pid);
      parentPort.postMessage({ hung: first.rank, seconds: (2 * w.staleMs) / 1000 });
      try { process.kill(first.pid, 'SIGKILL'); } catch {}
    }
  }
  setTimeout(tick, 250);
}
tick();
`;

/** How long a blocked main thread waits on a lost peer (default 10 s; a hang is 2x that). */
export function watchdogStaleMs(): number {
  const s = readEnv().hangWatchdogSeconds;
  return s !== undefined ? s * 1000 : 10_000;
}

export interface HangWatchdogOptions {
  /** Who this process is, in the one line the watchdog prints ("launcher", "rank 2"). */
  readonly label: string;
  /** A launcher (or node supervisor): the watched ranks' heartbeats are checked for hangs. */
  readonly checkHangs?: boolean;
  /** A launcher that is itself a rank (rank 0): its own blocked thread is a hang too. */
  readonly selfRank?: number;
  /** Where this process's heartbeat is published for its launcher. */
  readonly heartbeatFile?: string;
  /** A launcher's folder of its workers' heartbeat files, removed when the job is killed. */
  readonly heartbeatDir?: string;
  /** Default `watchdogStaleMs()`. */
  readonly staleMs?: number;
  /** A watched rank hung and was killed while this main thread was still responsive. */
  readonly onHung?: (rank: number, seconds: number) => void;
}

export class HangWatchdog {
  /**
   * [0]: the main thread's last beat (ms), [1]: collectives this rank has entered, [2]: when
   * the main thread started compiling kernels (ms; 0 when it is not).
   */
  private readonly beat = new Float64Array(new SharedArrayBuffer(24));
  private readonly thread: Worker;
  private readonly timer: NodeJS.Timeout;

  constructor(o: HangWatchdogOptions) {
    this.bump();
    this.thread = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: {
        heartbeat: this.beat.buffer,
        staleMs: o.staleMs ?? watchdogStaleMs(),
        label: o.label,
        checkHangs: o.checkHangs ?? false,
        selfRank: o.selfRank,
        heartbeatFile: o.heartbeatFile,
        heartbeatDir: o.heartbeatDir,
      },
    });
    this.thread.unref();
    const onHung = o.onHung;
    if (onHung)
      this.thread.on('message', (m: { hung: number; seconds: number }) =>
        onHung(m.hung, m.seconds),
      );
    this.timer = setInterval(() => this.bump(), 250);
    this.timer.unref();
  }

  /**
   * Watch a process whose disappearance, while this thread is blocked, ends the job; with a
   * rank and its heartbeat file, a launcher also ends the job when that rank hangs.
   */
  watch(pid: number, rank?: number, file?: string): void {
    if (pid > 0) this.thread.postMessage({ add: { pid, rank, file } });
  }

  unwatch(pid: number): void {
    this.thread.postMessage({ remove: pid });
  }

  /** This rank enters its next collective (called by the rank's communicator wrapper). */
  collective(): void {
    this.beat[1] = this.beat[1]! + 1;
  }

  /**
   * The main thread starts (true) or ends (false) a blocking kernel compile: it beats now, and
   * while it compiles neither it nor a peer waiting for it counts as hung (`excuseCompiles`).
   */
  compiling(on: boolean): void {
    this.bump();
    this.beat[2] = on ? Date.now() : 0;
  }

  stop(): void {
    clearInterval(this.timer);
    void this.thread.terminate();
  }

  private bump(): void {
    this.beat[0] = Date.now();
  }
}
