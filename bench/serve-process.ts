/**
 * Child processes of the GPU serving benchmarks: a node script run to completion, and a
 * `moeserve serve --load-format dummy` started on a free port and stopped again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** Runs a node script to completion, its output passed through; rejects on a non-zero exit. */
export function runNode(args: string[], label: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${label} exited with code ${code}`)),
    );
  });
}

export interface Server {
  readonly url: string;
  /** The server's `loaded ...` summary line (weights, load time). */
  readonly loadLine: string;
  stop(): Promise<void>;
}

/**
 * Starts `node CLI serve --model DIR --load-format dummy` on a free port with `extra` flags;
 * resolves once it prints its URL, rejects if it exits first. Its output is passed through
 * prefixed with `[serve]`.
 */
export function startServer(
  cli: string,
  dir: string,
  maxSeqs: number,
  maxLen: number,
  extra: string[],
): Promise<Server> {
  const args = [cli, 'serve', '--model', dir, '--load-format', 'dummy'];
  args.push('--port', '0', '--served-model-name', 'bench', '--max-num-seqs', String(maxSeqs));
  args.push('--max-model-len', String(maxLen), ...extra);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let loadLine = '';
  createInterface({ input: child.stderr! }).on('line', (l) => {
    if (l.startsWith('loaded ')) loadLine = l;
    process.stderr.write(`[serve] ${l}\n`);
  });
  return new Promise((resolve, reject) => {
    const fail = (why: string) => reject(new Error(`server did not start: ${why}`));
    child.on('exit', (code) => fail(`exited with code ${code}`));
    child.on('error', (e) => fail(e.message));
    createInterface({ input: child.stdout! }).on('line', (l) => {
      process.stderr.write(`[serve] ${l}\n`);
      const m = /serving \S+ at (http:\/\/\S+)\/v1/.exec(l);
      if (m) resolve({ url: m[1]!, loadLine, stop: () => stop(child) });
    });
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.removeAllListeners('exit');
    child.on('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
