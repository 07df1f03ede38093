import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { argmax, generateTokens } from '../../src/model/generate.js';
import { compareGolden, type GoldenExpect } from '../../src/model/golden-compare.js';
import { loadModel } from '../../src/model/load-model.js';
import { goldenCase } from '../golden-dir.js';

/** `moeserve <args>` as a child process, with its stderr collected as it arrives. */
interface Cli {
  readonly child: ChildProcess;
  stderr: string;
  stdout: string;
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
}

const running: Cli[] = [];
afterEach(() => {
  for (const c of running.splice(0)) c.child.kill('SIGKILL');
});

function cli(args: string[], env: Record<string, string> = {}): Cli {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const c: Cli = {
    child,
    stderr: '',
    stdout: '',
    exited: new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal }))),
  };
  child.stderr!.on('data', (b: Buffer) => (c.stderr += b.toString()));
  child.stdout!.on('data', (b: Buffer) => (c.stdout += b.toString()));
  running.push(c);
  return c;
}

/** Waits for the launcher's "ranks ready" line; returns the pid of each rank. */
async function rankPids(c: Cli, timeoutMs = 30_000): Promise<Map<number, number>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = /ranks ready: (.*)/.exec(c.stderr);
    if (m) {
      const pids = new Map<number, number>();
      for (const x of m[1]!.matchAll(/rank (\d+) pid (\d+)/g)) pids.set(Number(x[1]), Number(x[2]));
      return pids;
    }
    if (Date.now() > deadline || c.child.exitCode !== null)
      throw new Error(`no "ranks ready" line; stderr:\n${c.stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** True while the process exists and is not a zombie. */
function alive(pid: number): boolean {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return false;
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(stat, 'utf8'));
  } catch {
    return false;
  }
}

async function allGone(pids: Iterable<number>, timeoutMs = 10_000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let left = [...pids].filter(alive);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    left = left.filter(alive);
  }
  return left;
}

/** Every process below `root` now (children, their children, ...). */
function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      // pid (comm) state ppid ...: the comm may hold spaces, so split after the last ')'.
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // exited while we looked
    }
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const [pid, pp] of parent) {
      if (pp !== p) continue;
      out.push(pid);
      walk(pid);
    }
  };
  walk(root);
  return out;
}

/** Samples the launcher's descendants until it exits: every process it ever had. */
function trackProcesses(c: Cli): Set<number> {
  const seen = new Set<number>();
  const timer = setInterval(() => descendants(c.child.pid!).forEach((p) => seen.add(p)), 100);
  void c.exited.then(() => clearInterval(timer));
  return seen;
}

const TINY_MOE = goldenCase('tiny-moe');

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}
const longGenerate = (tp: number): string[] =>
  [
    'generate',
    '--model',
    TINY_MOE,
    '--ids',
    '1,2,3,4,5',
    '--max-tokens',
    '4000',
    '--ignore-eos',
  ].concat(['--tp', String(tp)]);

describe('moeserve --tp N: one process per rank', () => {
  it('forward --tp 2 --ep --sp reproduces the golden case through worker processes', async () => {
    const exp = JSON.parse(readFileSync(join(TINY_MOE, 'expect.json'), 'utf8')) as GoldenExpect;
    const out = join(mkdtempSync(join(tmpdir(), 'moeserve-tp-')), 'out.json');
    const c = cli(
      ['forward', '--model', TINY_MOE, '--ids', exp.ids.join(','), '--out', out].concat([
        '--tp',
        '2',
        '--ep',
        '--sp',
      ]),
    );
    expect((await c.exited).code, c.stderr).toBe(0);
    expect(c.stderr).toMatch(/FFN reduction placement \(tp=2 ep sp/);
    const got = JSON.parse(readFileSync(out, 'utf8')) as {
      logits: number[][];
      routed_experts: Record<string, number[][]>;
    };
    expect(
      compareGolden(exp, { logits: got.logits, routedExperts: got.routed_experts }).problems,
    ).toEqual([]);
  });

  it('generate --tp 4 --ep --sp decodes the same tokens as one rank', async () => {
    const model = await loadModel(TINY_MOE, { backend: new CpuBackend() });
    const want: number[] = [];
    for await (const t of generateTokens(model, [1, 2, 3, 4, 5], {
      maxTokens: 10,
      eosTokenIds: [],
      pick: argmax,
    }))
      want.push(t.tokenId);
    const c = cli(
      ['generate', '--model', TINY_MOE, '--ids', '1,2,3,4,5', '--max-tokens', '10'].concat([
        '--ignore-eos',
        '--tp',
        '4',
        '--ep',
        '--sp',
      ]),
    );
    expect((await c.exited).code, c.stderr).toBe(0);
    expect(c.stdout.trim()).toBe(want.join(','));
  });

  it('a rank that throws stops every rank, with a message naming it and its error', async () => {
    const c = cli(longGenerate(4), { MOESERVE_FAULT_INJECT: 'rank=2,step=3' });
    const pids = await rankPids(c);
    const { code } = await c.exited;
    expect(code).toBe(1);
    expect(c.stderr).toMatch(/rank 2 failed: injected fault at step 3/);
    expect(await allGone(pids.values())).toEqual([]);
  });

  it('a worker killed with SIGKILL stops rank 0 and the other workers', async () => {
    const c = cli(longGenerate(4));
    const pids = await rankPids(c);
    process.kill(pids.get(1)!, 'SIGKILL');
    const { code } = await c.exited;
    expect(code).toBe(1);
    expect(c.stderr).toMatch(/rank 1 failed: was killed by SIGKILL/);
    expect(await allGone(pids.values())).toEqual([]);
  });

  it('a second host joins with --nnodes 2 --node-rank 1 (both hosts on localhost here)', async () => {
    const port = await freePort();
    const common = ['--ids', '1,2,3,4,5', '--max-tokens', '6', '--ignore-eos', '--tp', '4'].concat([
      '--ep',
      '--nnodes',
      '2',
      '--master-addr',
      '127.0.0.1',
      '--master-port',
      String(port),
    ]);
    const node1 = cli(['generate', '--model', TINY_MOE, ...common, '--node-rank', '1']);
    const node0 = cli(['generate', '--model', TINY_MOE, ...common, '--node-rank', '0']);
    expect((await node0.exited).code, node0.stderr).toBe(0);
    expect((await node1.exited).code, node1.stderr).toBe(0);
    expect(node1.stderr).toMatch(/node 1: ranks 2, 3 started/);
    const model = await loadModel(TINY_MOE, { backend: new CpuBackend() });
    const want: number[] = [];
    for await (const t of generateTokens(model, [1, 2, 3, 4, 5], {
      maxTokens: 6,
      eosTokenIds: [],
      pick: argmax,
    }))
      want.push(t.tokenId);
    expect(node0.stdout.trim()).toBe(want.join(','));
  });

  it('a rank blocked in a native call is killed by its watchdog when rank 0 dies', async () => {
    const env = {
      MOESERVE_FAULT_INJECT: 'rank=1,step=2,mode=block',
      MOESERVE_HANG_WATCHDOG_S: '2',
    };
    const c = cli(longGenerate(2), env);
    const pids = await rankPids(c);
    await new Promise((r) => setTimeout(r, 500)); // rank 1 is now spinning in step 2
    c.child.kill('SIGKILL');
    await c.exited;
    expect(await allGone(pids.values(), 15_000)).toEqual([]);
  });

  it('rank 0 blocked in a native call is ended by its watchdog when a worker dies', async () => {
    const env = {
      MOESERVE_FAULT_INJECT: 'rank=0,step=2,mode=block',
      MOESERVE_HANG_WATCHDOG_S: '2',
    };
    const c = cli(longGenerate(4), env);
    const pids = await rankPids(c);
    await new Promise((r) => setTimeout(r, 500));
    process.kill(pids.get(2)!, 'SIGKILL');
    const { signal } = await c.exited;
    expect(signal).toBe('SIGKILL');
    expect(c.stderr).toMatch(/launcher: rank 2 \(pid \d+\) is gone and this rank has been blocked/);
    expect(await allGone(pids.values(), 15_000)).toEqual([]);
  });

  it('a rank that dies while the communicator is set up ends the group, naming it', async () => {
    const start = Date.now();
    const c = cli(longGenerate(4), { MOESERVE_FAULT_INJECT: 'rank=1,at=init,mode=exit' });
    const seen = trackProcesses(c);
    const { code } = await c.exited;
    expect(Date.now() - start).toBeLessThan(30_000);
    expect(code).toBe(1);
    expect(c.stderr).toMatch(/rank 1 failed: exited with code 3 \(injected exit at set-up\)/);
    expect(c.stderr.match(/failed:/g)?.length).toBe(1); // one message
    expect(seen.size).toBeGreaterThanOrEqual(3); // the three workers were seen
    expect(await allGone(seen)).toEqual([]);
  });

  it('a worker blocked forever mid-step ends the group within 30 s (default watchdog)', async () => {
    const c = cli(longGenerate(4), { MOESERVE_FAULT_INJECT: 'rank=1,step=2,mode=block' });
    const seen = trackProcesses(c);
    const pids = await rankPids(c, 60_000);
    const ready = Date.now();
    const { code } = await c.exited;
    expect(Date.now() - ready).toBeLessThan(30_000);
    expect(code).toBe(1);
    expect(c.stderr).toMatch(
      /rank 1 failed: blocked for over 20 s in a step \(no heartbeat\); killed by the launcher's watchdog/,
    );
    expect(c.stderr.match(/failed:/g)?.length).toBe(1);
    expect(await allGone([...pids.values(), ...seen])).toEqual([]);
  }, 90_000);

  it('rank 0 blocked forever mid-step is ended by its own watchdog, naming rank 0', async () => {
    const env = {
      MOESERVE_FAULT_INJECT: 'rank=0,step=2,mode=block',
      MOESERVE_HANG_WATCHDOG_S: '3',
    };
    const c = cli(longGenerate(2), env);
    const seen = trackProcesses(c);
    const pids = await rankPids(c, 60_000);
    const ready = Date.now();
    const { signal } = await c.exited;
    expect(Date.now() - ready).toBeLessThan(30_000);
    expect(signal).toBe('SIGKILL');
    expect(c.stderr).toMatch(
      /launcher: rank 0 \(pid \d+\) has been blocked for over 6 s \(a step that never returns\); ending the job/,
    );
    expect(await allGone([...pids.values(), ...seen])).toEqual([]);
  }, 90_000);

  it('--gpu-ids and --comm ipc are refused on the CPU backend, naming the flag', async () => {
    const base = ['forward', '--model', TINY_MOE, '--ids', '1,2', '--out', '-', '--tp', '2'];
    const a = cli([...base, '--gpu-ids', '0,0']);
    expect((await a.exited).code).toBe(2);
    expect(a.stderr).toMatch(/--gpu-ids needs --backend cuda/);
    const b = cli([...base, '--comm', 'ipc']);
    expect((await b.exited).code).toBe(2);
    expect(b.stderr).toMatch(/--comm ipc needs --backend cuda/);
  });

  it('the workers exit when rank 0 is killed with SIGKILL', async () => {
    const c = cli(longGenerate(2));
    const pids = await rankPids(c);
    c.child.kill('SIGKILL');
    await c.exited;
    expect(await allGone(pids.values())).toEqual([]);
  });
});
