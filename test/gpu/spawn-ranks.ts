/**
 * Starts W comm-child.js processes as one group (rank 0 first: it prints the rendezvous port
 * the others join) and collects each rank's RESULT line. The whole group must finish within
 * `timeoutMs`; on a timeout or a failed rank every child still running is killed (by its pid)
 * and the error names the ranks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RankJob } from './comm-child.js';

const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'comm-child.js');

interface Running {
  readonly proc: ChildProcess;
  readonly lines: string[];
  readonly done: Promise<number>;
}

function start(job: RankJob, onLine: (l: string) => void): Running {
  const proc = spawn(process.execPath, [CHILD, JSON.stringify(job)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  let buf = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString('utf8');
    const parts = buf.split('\n');
    buf = parts.pop()!;
    for (const l of parts) {
      lines.push(l);
      onLine(l);
    }
  });
  const done = new Promise<number>((resolve) => proc.on('exit', (code) => resolve(code ?? 1)));
  return { proc, lines, done };
}

export async function runRankGroup<R>(
  jobs: readonly Omit<RankJob, 'port'>[],
  timeoutMs: number,
): Promise<R[]> {
  const running: Running[] = [];
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`rank group did not finish within ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
  });
  try {
    const port = await Promise.race([
      new Promise<number>((resolve, reject) => {
        const r0 = start({ ...jobs[0]!, port: 0 }, (l) => {
          const m = /^PORT (\d+)$/.exec(l);
          if (m) resolve(Number(m[1]));
        });
        running.push(r0);
        void r0.done.then((c) => reject(new Error(`rank 0 exited (${c}) before the rendezvous`)));
      }),
      timeout,
    ]);
    for (const j of jobs.slice(1)) running.push(start({ ...j, port }, () => {}));
    const codes = await Promise.race([Promise.all(running.map((r) => r.done)), timeout]);
    const failed = codes.map((c, q) => (c === 0 ? -1 : q)).filter((q) => q >= 0);
    if (failed.length > 0) throw new Error(`ranks ${failed.join(', ')} failed`);
    return running.map((r, q) => {
      const line = r.lines.find((l) => l.startsWith('RESULT '));
      if (!line) throw new Error(`rank ${q} printed no RESULT`);
      return JSON.parse(line.slice(7)) as R;
    });
  } finally {
    clearTimeout(timer);
    for (const r of running)
      if (r.proc.exitCode === null && r.proc.pid) process.kill(r.proc.pid, 'SIGKILL');
  }
}
