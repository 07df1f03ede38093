/**
 * `npm run bench:parallel -- --model DIR --tp N [--backend cuda]`: for TP, TP+EP and
 * TP+EP+SP over N ranks (one process per GPU, NCCL on CUDA), the decode step time and the
 * prefill time (TTFT of a batch of prompts) at batch 1–128, the share of the step spent in
 * collectives, and the all-reduce latency at decode sizes with nccl-tests' algbw/busbw.
 * Prints markdown tables and writes one JSON object per measurement to --out.
 *
 * Meant for the multi-GPU machine with a real-dimension checkpoint, e.g.
 *   moeserve init-random --config minimax-m3 --num-layers 12 --out /data/m3-12l
 * It also runs on the CPU backend over the CPU communicator (tiny models) as a smoke test.
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { ForwardBatch } from '../backend/forward-batch.js';
import { defaultPageSize } from '../model/minimax-m3/kv-cache.js';
import { launchRankGroup } from '../engine/distributed/launch-group.js';
import type { RankGroupDriver } from '../engine/distributed/rank-group-driver.js';
import { TimedCommunicator } from '../parallel/timed-communicator.js';

interface BenchOptions {
  readonly model: string;
  readonly backend: string;
  readonly tp: number;
  readonly batches: number[];
  readonly context: number;
  readonly prompt: number;
  readonly maxPrefillTokens: number;
  readonly steps: number;
  readonly layouts: Layout[];
  readonly out: string | null;
}

interface Layout {
  readonly name: string;
  readonly ep: boolean;
  readonly sp: boolean;
}

const LAYOUTS: readonly Layout[] = [
  { name: 'TP', ep: false, sp: false },
  { name: 'TP+EP', ep: true, sp: false },
  { name: 'TP+EP+SP', ep: true, sp: true },
];

type Json = Record<string, string | number | boolean | null>;

/** The moeserve CLI next to this script (src/cli/main.ts under tsx, dist/cli/main.js built). */
const MAIN_SCRIPT = fileURLToPath(
  new URL(`../cli/main.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url),
);

function parseOptions(argv: string[]): BenchOptions {
  const { values: v } = parseArgs({
    args: argv,
    options: {
      model: { type: 'string' },
      backend: { type: 'string', default: 'cuda' },
      tp: { type: 'string', default: '2' },
      batches: { type: 'string', default: '1,2,4,8,16,32,64,128' },
      context: { type: 'string', default: '1024' },
      prompt: { type: 'string', default: '1024' },
      'max-prefill-tokens': { type: 'string', default: '16384' },
      steps: { type: 'string', default: '10' },
      layouts: { type: 'string', default: LAYOUTS.map((l) => l.name).join(',') },
      out: { type: 'string' },
    },
  });
  if (!v.model) throw new Error('--model DIR is required (a MiniMax-M3 checkpoint)');
  const names = v.layouts.split(',');
  return {
    model: v.model,
    backend: v.backend,
    tp: Number(v.tp),
    batches: v.batches.split(',').map(Number),
    context: Number(v.context),
    prompt: Number(v.prompt),
    maxPrefillTokens: Number(v['max-prefill-tokens']),
    steps: Number(v.steps),
    layouts: LAYOUTS.filter((l) => names.includes(l.name)),
    out: v.out ?? null,
  };
}

/** B sequences, each `numNew` new tokens after `numCached`, on disjoint pages. */
function makeBatch(
  V: number,
  B: number,
  numCached: number,
  numNew: number,
  pagesPerSeq: number,
  S: number,
): ForwardBatch {
  return {
    tokenIds: Int32Array.from({ length: B * numNew }, (_, i) => (i * 7919) % V),
    seqs: Array.from({ length: B }, (_, b) => ({
      numCached,
      numNew,
      pageTable: Int32Array.from({ length: pagesPerSeq }, (_, p) => b * pagesPerSeq + p),
    })),
    pageSize: S,
    logitsFor: 'last',
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

async function timeSteps(
  driver: RankGroupDriver,
  batch: ForwardBatch,
  kv: ReturnType<RankGroupDriver['allocKv']>,
  n: number,
): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await driver.forward(batch, kv);
    times.push(performance.now() - t0);
  }
  return times;
}

/** Decode step time and communication share at each batch size, then TTFT. */
async function benchModel(
  driver: RankGroupDriver,
  o: BenchOptions,
  layout: Layout,
): Promise<Json[]> {
  const S = defaultPageSize(driver.cfg);
  const maxB = Math.max(...o.batches);
  const pagesPerSeq = Math.ceil(Math.max(o.context + 1, o.prompt) / S);
  const kv = driver.allocKv(maxB * pagesPerSeq, S);
  const timed = driver.comm instanceof TimedCommunicator ? driver.comm : null;
  const rows: Json[] = [];
  for (const B of o.batches) {
    const decode = makeBatch(driver.cfg.vocabSize, B, o.context, 1, pagesPerSeq, S);
    await timeSteps(driver, decode, kv, 2);
    const stepMs = median(await timeSteps(driver, decode, kv, o.steps));
    let commShare: number | null = null;
    if (timed) {
      timed.enabled = true;
      timed.reset();
      const total = (await timeSteps(driver, decode, kv, o.steps)).reduce((a, b) => a + b, 0);
      commShare = (100 * timed.totalMs) / total;
      timed.enabled = false;
    }
    let ttftMs: number | null = null;
    if (B * o.prompt <= o.maxPrefillTokens) {
      const prefill = makeBatch(driver.cfg.vocabSize, B, 0, o.prompt, pagesPerSeq, S);
      await timeSteps(driver, prefill, kv, 1);
      ttftMs = median(await timeSteps(driver, prefill, kv, 3));
    }
    rows.push({
      kind: 'step',
      layout: layout.name,
      tp: o.tp,
      batch: B,
      context: o.context,
      prompt: o.prompt,
      decode_step_ms: stepMs,
      ttft_ms: ttftMs,
      comm_share_pct: commShare,
    });
    console.error(
      `${layout.name} batch ${B}: decode ${stepMs.toFixed(2)} ms, TTFT ${ttftMs?.toFixed(1) ?? '-'} ms, comm ${commShare?.toFixed(1) ?? '-'} %`,
    );
  }
  driver.freeKv(kv);
  return rows;
}

/** All-reduce latency at decode sizes [B, D] and a few large sizes, nccl-tests bandwidths. */
async function benchAllReduce(driver: RankGroupDriver, o: BenchOptions): Promise<Json[]> {
  const D = driver.cfg.hiddenSize;
  const dtype = o.backend === 'cuda' ? 'bf16' : 'f32';
  const eb = dtype === 'bf16' ? 2 : 4;
  const sizes = [...o.batches.map((B) => B * D), 2 ** 20, 2 ** 24];
  const W = o.tp;
  const rows: Json[] = [];
  for (const elems of sizes) {
    const ms = await driver.benchAllReduce(elems, dtype, 5, 20);
    const bytes = elems * eb;
    const algbw = bytes / (ms / 1000) / 1e9;
    rows.push({
      kind: 'allreduce',
      tp: W,
      dtype,
      bytes,
      time_us: ms * 1000,
      algbw_gbps: algbw,
      busbw_gbps: (algbw * 2 * (W - 1)) / W,
    });
  }
  return rows;
}

function table(rows: Json[], cols: string[]): string {
  const fmt = (v: unknown): string =>
    typeof v === 'number'
      ? Number.isInteger(v)
        ? String(v)
        : v.toFixed(2)
      : v === null
        ? '-'
        : String(v);
  return [
    `| ${cols.join(' | ')} |`,
    `|${cols.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${cols.map((c) => fmt(r[c])).join(' | ')} |`),
  ].join('\n');
}

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2));
  if (o.out) writeFileSync(o.out, '');
  const emit = (rows: Json[]): void => {
    if (o.out) for (const r of rows) appendFileSync(o.out, `${JSON.stringify(r)}\n`);
  };
  const steps: Json[] = [];
  let allReduce: Json[] = [];
  for (const layout of o.layouts) {
    const driver = await launchRankGroup({
      spec: {
        modelDir: o.model,
        backend: o.backend,
        comm: o.backend === 'cuda' ? 'nccl' : 'cpu',
        tp: o.tp,
        ep: layout.ep,
        sp: layout.sp,
        allReduceFusion: 'dense',
        fuseSharedExperts: false,
        profileComm: true,
      },
      nnodes: 1,
      nodeRank: 0,
      masterAddr: '127.0.0.1',
      masterPort: 0,
      rendezvousTimeoutMs: 600_000,
      log: (l) => console.error(l),
      workerEntry: { execArgv: process.execArgv, entry: MAIN_SCRIPT },
    });
    try {
      const rows = await benchModel(driver, o, layout);
      steps.push(...rows);
      emit(rows);
      if (allReduce.length === 0) {
        allReduce = await benchAllReduce(driver, o);
        emit(allReduce);
      }
    } finally {
      await driver.close();
    }
  }
  console.log(`## Decode step and TTFT (${o.model}, tp=${o.tp}, ${o.backend})\n`);
  console.log(table(steps, ['layout', 'batch', 'decode_step_ms', 'ttft_ms', 'comm_share_pct']));
  console.log(`\n## All-reduce (${o.tp} ranks)\n`);
  console.log(table(allReduce, ['bytes', 'dtype', 'time_us', 'algbw_gbps', 'busbw_gbps']));
}

main().catch((e: unknown) => {
  console.error(`bench:parallel: ${(e as Error).message}`);
  process.exitCode = 1;
});
