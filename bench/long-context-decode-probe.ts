/**
 * Why the batch-1 decode step at 100k context cost ~0.9 ms more after a one-shot 100k prefill
 * than after a chunked one (issue 12; long-context.md run 3: 3.145 against 2.244 ms, 1.985 at
 * 8k). One process, one model (3 dense + 1 MoE/MSA layer, real dimensions, random weights),
 * two sequences on disjoint pages (A and B), so that the KV content a prefill mode wrote and
 * the process state it left (workspaces, memory pool, clocks) can be told apart:
 *   8k one-shot on A; 100k chunked on A; 100k one-shot on B; decode A again (chunked content,
 *   post-one-shot state); 2 s sleep; fresh workspaces; 100k chunked over B; 100k one-shot over A.
 * Each probe: the step's CUDA graph replayed (device ms, median of 20, then 100 more), the same
 * graph after an optional sleep, a recaptured graph, eager host ms, a per-call device profile
 * of one eager step, the decode's MSA selection (-1 pads, distinct blocks) and its logits.
 * Per-call differences between probes say which op grew; KV samples say whether the modes
 * wrote the same cache.
 *   node dist/gpu/bench/long-context-decode-probe.js [--long 100000] [--short 8192]
 *        [--chunk 16384] [--sleep-ms 2000] [--out DIR] [--dry-run]
 * Writes long-context-decode-probe.json under --out (default $OUT or .).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ForwardBatch } from '../src/backend/forward-batch.js';
import { createCudaBackend, type CudaBackend } from '../src/backend/cuda/cuda-backend.js';
import { Workspace } from '../src/backend/cuda/workspace.js';
import { allocKvCache, type KvCache } from '../src/model/minimax-m3/kv-cache.js';
import { MiniMaxM3Model } from '../src/model/minimax-m3/minimax-m3-model.js';
import { SingleRankCommunicator } from '../src/parallel/communicator.js';
import type { Tensor } from '../src/tensor/tensor.js';
import { median, relErr } from '../test/gpu/check-util.js';
import { recordOps } from '../test/gpu/op-profile.js';
import { buildGpuWeights, realConfig } from '../test/gpu/real-model.js';
import {
  arg,
  capture,
  decodeOf,
  PAGE,
  pagesOf,
  prefill,
  sleep,
  stamp,
} from './long-context-util.js';

interface Probe {
  label: string;
  graphMs: number;
  graphLaterMs: number;
  graphAfterSleepMs: number | null;
  recapturedMs: number;
  eagerHostMs: number;
  eagerDeviceSumMs: number;
  opsTotal: Record<string, number>;
  calls: [string, number][];
  selection: { calls: number; pads: number; distinct: number; ids: number[] }[];
  logits: Float32Array;
  logitsNaN: number;
  argmax: number;
}

const r3 = (x: number) => Number(x.toFixed(3));

async function probe(
  gpu: CudaBackend,
  model: MiniMaxM3Model,
  kv: KvCache,
  label: string,
  b: ForwardBatch,
  sleepMs: number,
): Promise<Probe> {
  // Eager first (workspaces sized before capture), recording the decode's MSA selection.
  const selection: Probe['selection'] = [];
  const target = gpu as unknown as { msaSelect: (out: Tensor, ...r: unknown[]) => void };
  const select = target.msaSelect;
  target.msaSelect = (out: Tensor, ...rest: unknown[]) => {
    select.call(gpu, out, ...rest);
    const ids = Array.from(gpu.readI32(out));
    const real = ids.filter((i) => i >= 0);
    selection.push({
      calls: selection.length,
      pads: ids.length - real.length,
      distinct: new Set(real).size,
      ids,
    });
  };
  let logits: Float32Array;
  try {
    logits = (await model.forward(b, kv)).logits;
  } finally {
    target.msaSelect = select;
  }
  const g = await capture(gpu, model, kv, b);
  const graphMs = median(g.time(20));
  const graphLaterMs = median(g.time(100));
  let graphAfterSleepMs: number | null = null;
  if (sleepMs > 0) {
    await sleep(sleepMs);
    graphAfterSleepMs = median(g.time(20));
  }
  g.destroy();
  const g2 = await capture(gpu, model, kv, b);
  const recapturedMs = median(g2.time(20));
  g2.destroy();
  const host: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now();
    await model.forward(b, kv);
    host.push(performance.now() - t0);
  }
  const marks = await recordOps(gpu, () => model.forward(b, kv));
  const calls = marks.map(([k, a, e]) => [k, gpu.dev.elapsed(a, e)] as [string, number]);
  const opsTotal: Record<string, number> = {};
  for (const [k, ms] of calls) opsTotal[k] = (opsTotal[k] ?? 0) + ms;
  let argmax = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[argmax]!) argmax = i;
  const p: Probe = {
    label,
    graphMs,
    graphLaterMs,
    graphAfterSleepMs,
    recapturedMs,
    eagerHostMs: median(host),
    eagerDeviceSumMs: calls.reduce((s, [, ms]) => s + ms, 0),
    opsTotal,
    calls,
    selection,
    logits,
    logitsNaN: logits.filter((x) => Number.isNaN(x)).length,
    argmax,
  };
  stamp(
    `${label}: graph ${graphMs.toFixed(3)} ms (100 more ${graphLaterMs.toFixed(3)}` +
      `${graphAfterSleepMs === null ? '' : `, after ${sleepMs} ms sleep ${graphAfterSleepMs.toFixed(3)}`}` +
      `), recaptured ${recapturedMs.toFixed(3)}, eager host ${p.eagerHostMs.toFixed(3)}, ` +
      `eager device sum ${p.eagerDeviceSumMs.toFixed(3)}; selection pads ${selection.map((s) => s.pads).join('/')} ` +
      `distinct ${selection.map((s) => s.distinct).join('/')}; logits NaN ${p.logitsNaN}, argmax ${argmax}`,
  );
  return p;
}

/** The calls whose device time differs most between two probes of the same step. */
function callDiff(a: Probe, b: Probe, top = 12): string[] {
  if (a.calls.length !== b.calls.length)
    return [`call counts differ: ${a.calls.length} vs ${b.calls.length}`];
  const d = a.calls.map(([k, ms], i) => ({
    i,
    k,
    a: ms,
    b: b.calls[i]![1],
    d: b.calls[i]![1] - ms,
  }));
  d.sort((x, y) => Math.abs(y.d) - Math.abs(x.d));
  return d
    .slice(0, top)
    .map(
      (x) =>
        `#${x.i} ${x.k}: ${x.a.toFixed(3)} -> ${x.b.toFixed(3)} (${x.d >= 0 ? '+' : ''}${x.d.toFixed(3)})`,
    );
}

/** K, V and index-key samples of sequences A and B at the same pages: do the modes agree? */
function kvCompare(gpu: CudaBackend, kv: KvCache, pages: number, sample: number[]) {
  const out: Record<string, number>[] = [];
  kv.layers.forEach((layer, li) => {
    for (const [name, t] of [
      ['k', layer.k],
      ['v', layer.v],
      ['indexK', layer.indexK],
    ] as const) {
      if (!t) continue;
      for (const p of sample) {
        const a = gpu.readF32(gpu.rows(t, 1 + p, 1));
        const b = gpu.readF32(gpu.rows(t, 1 + pages + p, 1));
        let nanA = 0;
        let nanB = 0;
        let maxA = 0;
        let maxB = 0;
        for (let i = 0; i < a.length; i++) {
          if (Number.isNaN(a[i])) nanA++;
          else maxA = Math.max(maxA, Math.abs(a[i]!));
          if (Number.isNaN(b[i])) nanB++;
          else maxB = Math.max(maxB, Math.abs(b[i]!));
        }
        out.push({ layer: li, page: p, [name]: 1, relErr: relErr(b, a), nanA, nanB, maxA, maxB });
      }
    }
  });
  return out;
}

async function main(): Promise<void> {
  const out = arg('out', process.env['OUT'] ?? '.');
  const long = Number(arg('long', '100000'));
  const short = Number(arg('short', '8192'));
  const chunk = Number(arg('chunk', '16384'));
  const sleepMs = Number(arg('sleep-ms', '2000'));
  const pages = Math.ceil((long + 1) / PAGE);
  const plan = `long ${long}, short ${short}, chunk ${chunk}, sleep ${sleepMs} ms, ${pages} pages a sequence`;
  if (process.argv.includes('--dry-run')) {
    console.log(
      `dry run: ${plan}; ${prefill(long, chunk, pagesOf(pages, 0, long), 200064).length} chunks`,
    );
    return;
  }
  stamp(plan);
  const gpu = await createCudaBackend({});
  const cfg = realConfig(1);
  const model = new MiniMaxM3Model(
    cfg,
    await buildGpuWeights(gpu, cfg, true),
    gpu,
    new SingleRankCommunicator(),
  );
  const kv = allocKvCache(gpu, cfg, { tpRank: 0, tpSize: 1 }, 1 + 2 * pages, PAGE);
  const fill = async (what: string, L: number, c: number, base: number) => {
    const t0 = performance.now();
    for (const b of prefill(L, c, pagesOf(pages, base, L), cfg.vocabSize))
      await model.forward(b, kv);
    stamp(`${what}: prefill ${(performance.now() - t0).toFixed(0)} ms`);
  };
  const probes: Probe[] = [];
  const kvRows: Record<string, Record<string, number>[]> = {};
  const samples = [0, 1, pages >> 1, pages - 40, pages - 2];
  try {
    const run = async (label: string, L: number, base: number, s = 0) =>
      probes.push(await probe(gpu, model, kv, label, decodeOf(L, pagesOf(pages, base, L)), s));
    await fill('warm-up 4096', 4096, 0, 0);
    await fill(`${short} one-shot A`, short, 0, 0);
    await fill(`${short} one-shot A again`, short, 0, 0);
    await run(`${short} one-shot A`, short, 0);
    await fill(`${long} chunked A`, long, chunk, 0);
    await run(`${long} chunked A`, long, 0);
    await fill(`${long} one-shot B`, long, 0, 1);
    await run(`${long} one-shot B`, long, 1, sleepMs);
    await run(`${long} chunked A, after the one-shot`, long, 0);
    kvRows['A chunked vs B one-shot'] = kvCompare(gpu, kv, pages, samples);
    const ws = gpu.ctx as unknown as { ws: Workspace };
    ws.ws = new Workspace(gpu.dev); // decode on freshly sized workspaces (the old ones stay allocated)
    await run(`${long} one-shot B, fresh workspaces`, long, 1);
    await fill(`${long} chunked over B`, long, chunk, 1);
    await run(`${long} chunked B (over the one-shot)`, long, 1);
    await fill(`${long} one-shot over A`, long, 0, 0);
    await run(`${long} one-shot A (over the chunked)`, long, 0, sleepMs);
    await run(`${short} on A after everything`, short, 0);
    kvRows['A one-shot vs B chunked'] = kvCompare(gpu, kv, pages, samples);
  } finally {
    report(out, plan, { long, short }, probes, kvRows);
  }
}

/** Per-call differences, logits and selection agreement, KV agreement, the summary table. */
function report(
  out: string,
  plan: string,
  { long, short }: { long: number; short: number },
  probes: Probe[],
  kvRows: Record<string, Record<string, number>[]>,
): void {
  const diffs: Record<string, string[]> = {};
  const byLabel = (s: string) => probes.find((p) => p.label.startsWith(s));
  const pairs: [string, string][] = [
    [`${long} chunked A`, `${long} one-shot B`],
    [`${long} chunked A`, `${long} chunked A, after`],
    [`${long} chunked B`, `${long} one-shot A`],
    [`${short} one-shot A`, `${long} chunked A`],
  ];
  const have = pairs.filter(([x, y]) => byLabel(x) && byLabel(y));
  for (const [x, y] of have) {
    const key = `${x} -> ${y}`;
    diffs[key] = callDiff(byLabel(x)!, byLabel(y)!);
    console.log(`per-call device ms, ${key}:\n  ${diffs[key]!.join('\n  ')}`);
  }
  const logitsVs = (x: Probe, y: Probe) => ({
    pair: `${x.label} vs ${y.label}`,
    relErr: relErr(y.logits, x.logits),
    sameArgmax: x.argmax === y.argmax,
    selectionSame: x.selection.map((s, i) => {
      const o = y.selection[i];
      return o ? s.ids.filter((id, j) => id === o.ids[j]).length / s.ids.length : 0;
    }),
  });
  const agree = have.slice(0, 3).map(([x, y]) => logitsVs(byLabel(x)!, byLabel(y)!));
  for (const a of agree)
    console.log(
      `logits ${a.pair}: relErr ${a.relErr.toExponential(2)}, same argmax ${a.sameArgmax}, selection ids equal ${a.selectionSame.map((f) => f.toFixed(2)).join('/')}`,
    );
  const worstKv = (rows: Record<string, number>[]) =>
    rows.reduce((w, r) => (r['relErr']! > w['relErr']! ? r : w), rows[0]!);
  for (const [k, rows] of Object.entries(kvRows))
    console.log(`KV ${k}: worst sample ${JSON.stringify(worstKv(rows))}`);
  mkdirSync(out, { recursive: true });
  const slim = probes.map(({ logits: _l, calls, selection, ...p }) => ({
    ...p,
    opsTotal: Object.fromEntries(Object.entries(p.opsTotal).map(([k, v]) => [k, r3(v)])),
    calls: calls.map(([k, v]) => [k, r3(v)]),
    selection: selection.map(({ ids: _i, ...s }) => s),
  }));
  writeFileSync(
    join(out, 'long-context-decode-probe.json'),
    JSON.stringify({ plan, probes: slim, diffs, agree, kvRows }, null, 1),
  );
  console.log(
    '\nsummary (graph ms: first 20 / 100 more / after sleep / recaptured; eager host; eager device sum):',
  );
  for (const p of probes)
    console.log(
      `  ${p.label.padEnd(44)} ${p.graphMs.toFixed(3)} / ${p.graphLaterMs.toFixed(3)} / ${p.graphAfterSleepMs?.toFixed(3) ?? '-'} / ${p.recapturedMs.toFixed(3)}; ${p.eagerHostMs.toFixed(3)}; ${p.eagerDeviceSumMs.toFixed(3)}`,
    );
  for (const p of probes) {
    const top = Object.entries(p.opsTotal).sort((x, y) => y[1] - x[1]);
    console.log(
      `  ${p.label}: ${top
        .slice(0, 7)
        .map(([k, v]) => `${k} ${v.toFixed(3)}`)
        .join('; ')}`,
    );
  }
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 2;
});
