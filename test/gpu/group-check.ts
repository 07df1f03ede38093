/**
 * `--tp` groups whose ranks share one GPU (issue 14), through the real CLI and launcher:
 * 1. `forward --backend cuda --tp N [--sp] --gpu-ids 0,..` (the IPC communicator, chosen
 *    because the ranks share the GPU) against the CPU backend: per-position relative logit
 *    error under golden-check's bf16 limit, top-1 where the CPU margin allows, against the CPU
 *    forward with the GPU's experts forced on the rows where they are a near-tie of the CPU's
 *    (forced-routes.ts: a bf16 flip there is legitimate, and changes every later position),
 *    and the GPU's MSA blocks forced where they are a near-tie on the index scores
 *    (forced-blocks.ts, from the GPU's recorded inputs); no route or block row may differ
 *    beyond a near-tie; the same layout's CPU group equals the CPU's one rank (float32);
 * 2. `--allreduce-fusion all --allreduce-trace DIR` on the GPU group: every traced layer's
 *    residual and norm max diff is exactly 0;
 * 3. failures on the GPU: a rank exiting during set-up, a rank SIGKILLed mid-step and a rank
 *    blocked forever mid-step each end the group within 30 s with a message naming the rank,
 *    and no process of the group is left.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readTraceDir, summarizeTrace } from '../../src/parallel/allreduce-trace-summary.js';
import { GEMM_RS_MIN_ROWS } from '../../src/parallel/cuda-ipc/gemm-rs-plan.js';
import type { Row } from './check-util.js';
import { parseModelConfig } from '../../src/config/model-config.js';
import { readGpuSelections, RECORD_ENV } from './forced-blocks.js';
import { cpuForwardForcing, ROUTE_TIE } from './forced-routes.js';
import { compareLogits } from './golden-check.js';

const CLI = join(dirname(fileURLToPath(import.meta.url)), '../../src/cli/main.js');
const RECORDER = new URL('./record-selections.js', import.meta.url).href;
const LIMIT_S = 30;

interface Ran {
  code: number | null;
  signal: string | null;
  stderr: string;
  ms: number;
  /** Date.now() when it exited. */
  endedAt: number;
  /** Every process the launcher had while it ran (sampled). */
  seen: Set<number>;
}

interface Forward {
  logits: number[][];
  routed_experts: Record<string, number[][]>;
}

/** `moeserve <args>`; `during` runs once the group reports its ranks ready. */
function cli(
  args: string[],
  env: Record<string, string> = {},
  during?: (pids: Map<number, number>) => void,
  timeoutMs = 120_000,
  nodeArgs: string[] = [],
): Promise<Ran> {
  const t0 = Date.now();
  const child = spawn(process.execPath, [...nodeArgs, CLI, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const r: Ran = { code: null, signal: null, stderr: '', ms: 0, endedAt: 0, seen: new Set() };
  let fired = false;
  child.stderr.on('data', (b: Buffer) => {
    r.stderr += b.toString();
    const m = /ranks ready: (.*)/.exec(r.stderr);
    if (m && during && !fired) {
      fired = true;
      const pids = new Map<number, number>();
      for (const x of m[1]!.matchAll(/rank (\d+) pid (\d+)/g)) pids.set(Number(x[1]), Number(x[2]));
      during(pids);
    }
  });
  child.stdout.resume();
  const sampler = setInterval(() => descendants(child.pid!).forEach((p) => r.seen.add(p)), 100);
  const killer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      clearInterval(sampler);
      clearTimeout(killer);
      Object.assign(r, { code, signal, ms: Date.now() - t0, endedAt: Date.now() });
      resolve(r);
    }),
  );
}

function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
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

function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

async function leftAlive(pids: Iterable<number>): Promise<number[]> {
  await new Promise((r) => setTimeout(r, 1000));
  return [...pids].filter(alive);
}

function gpuIds(tp: number): string {
  return Array.from({ length: tp }, () => '0').join(',');
}

async function forward(
  caseDir: string,
  ids: number[],
  args: string[],
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<Forward> {
  const out = join(mkdtempSync(join(tmpdir(), 'group-check-')), 'out.json');
  const base = ['forward', '--model', caseDir, '--ids', ids.join(','), '--out', out];
  const r = await cli([...base, ...args], env, undefined, 120_000, nodeArgs);
  if (r.code !== 0) throw new Error(`forward ${args.join(' ')} failed:\n${r.stderr}`);
  return JSON.parse(readFileSync(out, 'utf8')) as Forward;
}

function routeRowsDiffering(a: Forward, b: Forward): { diff: number; rows: number } {
  let diff = 0;
  let rows = 0;
  for (const [layer, ref] of Object.entries(b.routed_experts))
    ref.forEach((r, t) => {
      rows++;
      const g = [...(a.routed_experts[layer]?.[t] ?? [])].sort((x, y) => x - y).join(',');
      if (g !== [...r].sort((x, y) => x - y).join(',')) diff++;
    });
  return { diff, rows };
}

/** Logit values (float32 bits) and routed-expert rows that differ between two forwards. */
function bitsDiffering(a: Forward, b: Forward): { logits: number; routes: number } {
  let logits = 0;
  b.logits.forEach((row, t) =>
    row.forEach((x, v) => {
      if (!Object.is(Math.fround(a.logits[t]?.[v] ?? NaN), Math.fround(x))) logits++;
    }),
  );
  return { logits, routes: routeRowsDiffering(a, b).diff };
}

/**
 * `long` layouts: the same CUDA group with GEMM + reduce-scatter forced on (threshold
 * GEMM_RS_MIN_ROWS) and off; the op's contract is the bits of GEMM then reduce-scatter, so
 * the two forwards must agree bit for bit (logits and routes), whatever either's error to the CPU.
 */
async function gemmRsBitExact(
  caseDir: string,
  ids: number[],
  args: string[],
  name: string,
): Promise<Row> {
  const check = `${name}: GEMM-RS on vs off, logit values + route rows differing`;
  try {
    const on = await forward(caseDir, ids, args, {
      MOESERVE_GEMM_RS_MIN_ROWS: String(GEMM_RS_MIN_ROWS),
    });
    const off = await forward(caseDir, ids, args, { MOESERVE_GEMM_RS_MIN_ROWS: '1e12' });
    const d = bitsDiffering(on, off);
    console.log(`${name}: GEMM-RS on vs off: ${d.logits} logits, ${d.routes} route rows differ`);
    return {
      check,
      value: `${d.logits} + ${d.routes}`,
      limit: '0 + 0',
      pass: d.logits === 0 && d.routes === 0,
    };
  } catch (e) {
    console.error((e as Error).message);
    return { check, value: 'error', limit: '-', pass: false };
  }
}

/** One forward layout of check 1: `long` repeats the prompt past GEMM_RS_MIN_ROWS tokens. */
export interface GroupLayout {
  readonly tp: number;
  readonly sp: boolean;
  readonly ep?: boolean;
  readonly long?: boolean;
  readonly extra?: readonly string[];
}

export const GROUP_LAYOUTS: readonly GroupLayout[] = [
  { tp: 2, sp: false },
  { tp: 4, sp: false },
  { tp: 2, sp: true },
  { tp: 4, sp: true },
  // SP with T >= GEMM_RS_MIN_ROWS: o_proj and the dense down_proj as GEMM + reduce-scatter
  // (forced on and off: bit-exact), and the group against the CPU at a long prompt.
  { tp: 2, sp: true, long: true },
  // --ep on a shared GPU: the IPC communicator's all-to-all dispatch and combine.
  { tp: 2, sp: false, ep: true },
  { tp: 2, sp: true, ep: true },
  { tp: 4, sp: true, ep: true },
];

/** 1: every layout on one GPU against the CPU backend. */
async function checkLayouts(
  caseDir: string,
  prompt: number[],
  layouts: readonly GroupLayout[],
): Promise<Row[]> {
  const rows: Row[] = [];
  for (const { tp, sp, ep, long, extra = [] } of layouts) {
    const ids = long
      ? Array.from({ length: GEMM_RS_MIN_ROWS + 77 }, (_, i) => prompt[i % prompt.length]!)
      : prompt;
    const layout = ['--tp', String(tp), ...(ep ? ['--ep'] : []), ...(sp ? ['--sp'] : []), ...extra];
    const name = `tp${tp}${ep ? '+ep' : ''}${sp ? '+sp' : ''}${long ? ` T=${ids.length}` : ''}${extra.length ? ` ${extra.join(' ')}` : ''} --gpu-ids ${gpuIds(tp)}`;
    const gpuArgs = ['--backend', 'cuda', ...layout, '--gpu-ids', gpuIds(tp)];
    if (long) rows.push(await gemmRsBitExact(caseDir, ids, gpuArgs, name));
    try {
      rows.push(...(await compareToCpu(caseDir, ids, layout, gpuArgs, name)));
    } catch (e) {
      console.error((e as Error).message);
      rows.push({ check: name, value: 'error', limit: '-', pass: false });
    }
  }
  return rows;
}

/**
 * One layout's GPU group against the CPU: the reference is the CPU forward (one rank) with the
 * GPU's experts forced on the route rows that are near-ties on the CPU's scores (forced-routes.ts),
 * and that CPU forward unforced must equal the same layout's CPU group (float32: ~1e-6).
 */
async function compareToCpu(
  caseDir: string,
  ids: number[],
  layout: string[],
  gpuArgs: string[],
  name: string,
): Promise<Row[]> {
  // The GPU ranks record their MSA selections and index inputs (record-selections.ts).
  const rec = mkdtempSync(join(tmpdir(), 'group-msa-'));
  const got = await forward(caseDir, ids, gpuArgs, { [RECORD_ENV]: rec }, ['--import', RECORDER]);
  const cfg = parseModelConfig(
    JSON.parse(readFileSync(join(caseDir, 'config.json'), 'utf8')),
    caseDir,
  );
  const msa = cfg.sparse ? readGpuSelections(rec, cfg) : undefined;
  const { ref, flips, blockFlips } = await cpuForwardForcing(caseDir, ids, got, true, msa);
  const s = compareLogits(got.logits, ref.logits);
  const routes = routeRowsDiffering(got, ref);
  const forced = flips.filter((f) => f.forced);
  const blocksForced = blockFlips.filter((f) => f.forced).length;
  const beyond = flips.length - forced.length;
  const blocksBeyond = blockFlips.length - blocksForced;
  const where = flips.map((f) => `L${f.layer}t${f.token} gap ${f.gap.toExponential(1)}`);
  const bad = blockFlips
    .filter((f) => !f.forced)
    .map(
      (f) =>
        `call ${f.call} head ${f.head} t${f.token} gap ${f.gap.toExponential(1)} err ${f.err.toExponential(1)}`,
    );
  // As it finishes (a bounded GPU window may end the run before the table is printed).
  console.log(
    `${name}: max rel ${s.maxRel.toExponential(2)}, ${s.overLimit} over limit, ${s.top1Mismatch} top-1 mismatches, route flips ${flips.length} (${forced.length} near-tied, forced${where.length ? `: ${where.slice(0, 6).join(', ')}` : ''}), MSA block rows flipped ${blockFlips.length} (${blocksForced} near-tied, forced${bad.length ? `; not: ${bad.slice(0, 4).join(', ')}` : ''}), route rows left differing ${routes.diff}/${routes.rows}`,
  );
  const layoutRef = await forward(caseDir, ids, ['--backend', 'cpu', ...layout]);
  const plain = (await cpuForwardForcing(caseDir, ids, got, false)).ref;
  const cpuRel = compareLogits(layoutRef.logits, plain.logits).maxRel;
  return [
    {
      check: `${name}: CUDA (ipc) vs CPU max rel logit err (near-tied choices forced: ${forced.length} routes, ${blocksForced} MSA rows)`,
      value: s.maxRel.toExponential(2),
      limit: '< 2e-2, top-1 where margin allows',
      pass: s.overLimit === 0 && s.top1Mismatch === 0,
    },
    {
      check: `${name}: routed-expert rows differing beyond a near-tie (gap > ${ROUTE_TIE})`,
      value: `${beyond}/${routes.rows}`,
      limit: '0',
      pass: beyond === 0,
    },
    {
      check: `${name}: MSA block rows differing beyond a near-tie (index-score error)`,
      value: `${blocksBeyond} (${blocksForced} near-tied)`,
      limit: '0',
      pass: blocksBeyond === 0 && (msa !== undefined || !cfg.sparse),
    },
    {
      check: `${name}: CPU group vs CPU one rank max rel logit err`,
      value: cpuRel.toExponential(2),
      limit: '< 1e-5',
      pass: cpuRel < 1e-5 && routeRowsDiffering(layoutRef, plain).diff === 0,
    },
  ];
}

/** 2: --allreduce-fusion all traced on the GPU group: all zeros on every layer. */
async function checkFusionTrace(caseDir: string, ids: number[]): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), 'group-trace-'));
  const check = 'tp2 --gpu-ids 0,0 --allreduce-fusion all: trace max diff over layers';
  try {
    await forward(caseDir, ids, [
      ...['--backend', 'cuda', '--tp', '2', '--gpu-ids', '0,0'],
      ...['--allreduce-fusion', 'all', '--allreduce-trace', dir],
    ]);
    const { records } = readTraceDir(dir);
    const s = summarizeTrace(records);
    const worst = Math.max(
      0,
      ...s.layers.map((l) => Math.max(l.residual_max_diff, l.norm_max_diff)),
    );
    return {
      check,
      value: `${worst} over ${s.layers.length} layers, ${records.length} calls`,
      limit: '0',
      pass: worst === 0 && records.length > 0,
    };
  } catch (e) {
    console.error((e as Error).message);
    return { check, value: 'error', limit: '-', pass: false };
  }
}

/** 3: a failing rank ends the GPU group within 30 s, naming it, leaving no process. */
async function checkFailures(caseDir: string, only?: ReadonlySet<number>): Promise<Row[]> {
  const gen = (tp: number): string[] =>
    [...['generate', '--model', caseDir, '--ids', '1,2,3,4,5', '--max-tokens', '4000']].concat([
      ...['--ignore-eos', '--backend', 'cuda', '--tp', String(tp), '--gpu-ids', gpuIds(tp)],
    ]);
  const cases: {
    name: string;
    env: Record<string, string>;
    during?: (p: Map<number, number>) => void;
    message: RegExp;
  }[] = [
    {
      name: 'rank 1 exits during IPC set-up',
      env: { MOESERVE_FAULT_INJECT: 'rank=1,at=init,mode=exit' },
      message: /rank 1 failed: exited with code 3/,
    },
    {
      name: 'rank 2 SIGKILLed mid-step (default watchdog)',
      env: {},
      during: (p) => setTimeout(() => process.kill(p.get(2)!, 'SIGKILL'), 1500),
      message: /rank 2 (failed|\(pid \d+\) is gone)/,
    },
    {
      name: 'rank 1 blocked forever mid-step (watchdog 3 s)',
      env: { MOESERVE_FAULT_INJECT: 'rank=1,step=3,mode=block', MOESERVE_HANG_WATCHDOG_S: '3' },
      message: /rank 1 (failed: blocked|\(pid \d+\) has been blocked)/,
    },
  ];
  const rows: Row[] = [];
  for (const [i, c] of cases.entries()) {
    if (only && !only.has(i)) continue;
    const startedAt = Date.now();
    let readyAt = 0;
    const r = await cli(
      gen(c.name.startsWith('rank 2') ? 4 : 2),
      c.env,
      (p) => {
        readyAt = Date.now();
        c.during?.(p);
      },
      90_000,
    );
    // From the failure's start: the ready line for mid-step faults, the launch for set-up.
    const ended = (r.endedAt - (readyAt || startedAt)) / 1000;
    const left = await leftAlive(r.seen);
    const named = c.message.test(r.stderr);
    if (!named || left.length > 0) console.error(`${c.name}:\n${r.stderr.slice(-3000)}`);
    console.log(`${c.name}: ended ${ended.toFixed(1)} s, named ${named}, ${left.length} left`);
    rows.push({
      check: `${c.name}: group ended, rank named, no process left`,
      value: `${ended.toFixed(1)} s, ${named ? 'named' : 'NOT named'}, ${left.length} left`,
      limit: `<= ${LIMIT_S} s (from ${readyAt ? 'ready' : 'launch'})`,
      pass: named && left.length === 0 && r.code !== 0 && ended <= LIMIT_S,
    });
  }
  return rows;
}

/**
 * `parts`: which of layouts, trace, failures to run (default all); `failures`: which failure
 * cases (0 exit at set-up, 1 SIGKILL mid-step, 2 blocked mid-step; default all).
 */
export async function checkSharedGpuGroups(
  goldenDir: string,
  parts: ReadonlySet<string> = new Set(['layouts', 'trace', 'failures']),
  layouts: readonly GroupLayout[] = GROUP_LAYOUTS,
  failures?: ReadonlySet<number>,
): Promise<Row[]> {
  const caseDir = join(goldenDir, 'tiny-moe');
  const { ids } = JSON.parse(readFileSync(join(caseDir, 'expect.json'), 'utf8')) as {
    ids: number[];
  };
  return [
    ...(parts.has('layouts') ? await checkLayouts(caseDir, ids, layouts) : []),
    ...(parts.has('trace') ? [await checkFusionTrace(caseDir, ids)] : []),
    ...(parts.has('failures') ? await checkFailures(caseDir, failures) : []),
  ];
}
