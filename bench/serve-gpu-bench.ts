/**
 * Served decode against the kernel's graph step, on the GPU machine:
 *   npm run bench:serve-gpu [-- --moe-layers 1,5] [--concurrency 1,8,32,64] [--input-len 1024]
 *     [--output-len 256] [--waves 3] [--min-prompts 8] [--skip-load] [--load-dir DIR]
 *     [--out DIR] [--serve-args "--flag value ..."]
 *   (--backend cpu --preset tiny smoke-tests the script on a machine without a GPU)
 * For each model (MiniMax-M3 dimensions, 3 dense + N MoE layers, `--load-format dummy`):
 *  1. the decode step of the same model as a replayed CUDA graph at each batch = concurrency,
 *     context input + output/2 (graph-step-run.js, its own process);
 *  2. `moeserve serve --backend cuda --load-format dummy` in a child process, and the
 *     `bench serve` client (in this process) at each concurrency: max(min-prompts,
 *     waves × concurrency) prompts of exactly input-len tokens (random letters: the dummy model
 *     has the byte tokenizer), max_tokens output-len, ignore_eos, greedy.
 * Then (unless --skip-load) `init-random --config minimax-m3 --num-layers 4` (21.75 GB) to
 * --load-dir on local disk, written once, and two timed loads of it (load-bench.js).
 * Prints one table per model and writes serve-gpu-bench.json / .md under --out ($OUT or .).
 *
 * Metrics are `bench serve`'s (SGLang conventions: a chunk counts when it carries text; the
 * dummy model's byte tokenizer shows every id past 255 as `<id>`, so each token is text).
 * Tokens per SSE event and the lower bound on one-token events come from the stream itself.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchRequest } from '../src/bench/bench-dataset.js';
import type { BenchMetrics } from '../src/bench/bench-metrics.js';
import { runBenchmark } from '../src/bench/bench-runner.js';
import { SeededRng } from '../src/bench/seeded-rng.js';
import { PRESETS, withNumLayers } from '../src/model/weights/random-presets.js';
import { runNode, startServer } from './serve-process.js';

const HERE = dirname(fileURLToPath(import.meta.url)); // dist/gpu/bench
// The CLI of `npm run build` (dist/cli): dist/gpu has no package.json beside it for /version.
const CLI = join(HERE, '../../cli/main.js');

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
}
const list = (s: string): number[] => s.split(',').map(Number);

interface Row {
  concurrency: number;
  prompts: number;
  completed: number;
  failed: number;
  meanInputTokens: number;
  tpotP50: number;
  graphMs: number;
  tpotOverGraph: number;
  itlP50: number;
  itlOverTpot: number;
  tokensPerEvent: number;
  /** Lower bound on the share of events carrying exactly one token (bench serve's). */
  oneTokenEventsMin: number;
  outputTokPerS: number;
  ttftP50: number;
}

/** Prompts of exactly `len` byte tokens (random lowercase letters, distinct per prompt). */
function prompts(n: number, len: number, out: number, seed: number): BenchRequest[] {
  const rng = new SeededRng(seed);
  return Array.from({ length: n }, () => ({
    prompt: Array.from({ length: len }, () => String.fromCharCode(97 + rng.int(0, 25))).join(''),
    promptLen: len,
    outputLen: out,
  }));
}

function rowOf(c: number, n: number, m: BenchMetrics, graphMs: number): Row {
  return {
    concurrency: c,
    prompts: n,
    completed: m.completed,
    failed: m.failed,
    meanInputTokens: m.totalInputTokens / Math.max(1, m.completed),
    tpotP50: m.tpot.median,
    graphMs,
    tpotOverGraph: m.tpot.median / graphMs,
    itlP50: m.itl.median,
    itlOverTpot: m.itl.median / m.tpot.median,
    tokensPerEvent: m.tokensPerEvent,
    oneTokenEventsMin: m.oneTokenEventsMin,
    outputTokPerS: m.outputThroughput,
    ttftP50: m.ttft.median,
  };
}

function table(title: string, rows: Row[]): string {
  const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '-');
  return [
    `### ${title}`,
    '',
    '| concurrency | prompts | served TPOT p50 ms | graph step ms | TPOT / graph | ITL p50 ms | ITL p50 / TPOT p50 | tokens per SSE event | 1-token events ≥ | output tok/s | TTFT p50 ms |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.concurrency} | ${r.completed}/${r.prompts} | ${f(r.tpotP50)} | ${f(r.graphMs, 3)} | ${f(r.tpotOverGraph)} | ${f(r.itlP50)} | ${f(r.itlOverTpot)} | ${f(r.tokensPerEvent, 3)} | ${(100 * r.oneTokenEventsMin).toFixed(1)}% | ${f(r.outputTokPerS, 0)} | ${f(r.ttftP50, 1)} |`,
    ),
    '',
  ].join('\n');
}

async function benchModel(
  numMoe: number,
  o: Opts,
): Promise<{ title: string; rows: Row[]; load: string }> {
  const dir = join(o.work, `m3-3dense-${numMoe}moe`);
  mkdirSync(dir, { recursive: true });
  const raw = withNumLayers(PRESETS[o.preset]!(), 3 + numMoe);
  writeFileSync(join(dir, 'config.json'), JSON.stringify(raw, null, 2));
  const graph = o.backend === 'cuda' ? await graphSteps(dir, numMoe, o) : [];
  const maxLen = o.inputLen + o.outputLen + 64;
  const server = await startServer(CLI, dir, Math.max(...o.conc), maxLen, [
    '--backend',
    o.backend,
    ...o.serveArgs,
  ]);
  const rows: Row[] = [];
  try {
    for (const c of o.conc) {
      const n = Math.max(o.minPrompts, o.waves * c);
      const result = await runBenchmark({
        baseUrl: server.url,
        backend: 'openai',
        model: 'bench',
        requests: prompts(n, o.inputLen, o.outputLen, 1000 + c),
        maxConcurrency: c,
        requestRate: Infinity,
        burstiness: 1,
        seed: 1,
        warmupRequests: 1,
        ignoreEos: true,
        temperature: 0,
        timeoutMs: 600_000,
        convention: 'sglang',
      });
      const row = rowOf(c, n, result.metrics, graph.find((g) => g.batch === c)?.graphMs ?? NaN);
      console.log(`3 dense + ${numMoe} MoE, concurrency ${c}: ${JSON.stringify(row)}`);
      rows.push(row);
    }
  } finally {
    await server.stop();
  }
  return {
    title: `MiniMax-M3 dims, 3 dense + ${numMoe} MoE layers (dummy weights)`,
    rows,
    load: server.loadLine,
  };
}

/** The graph step at each concurrency as batch, context input + output/2 (own process). */
async function graphSteps(dir: string, numMoe: number, o: Opts) {
  const json = join(o.work, `graph-${numMoe}.json`);
  const context = String(o.inputLen + o.outputLen / 2);
  const script = join(HERE, 'graph-step-run.js');
  const args = [script, '--model', dir, '--batches', o.conc.join(','), '--context', context];
  await runNode([...args, '--json', json], 'graph step');
  return (JSON.parse(readFileSync(json, 'utf8')) as { rows: { batch: number; graphMs: number }[] })
    .rows;
}

interface Opts {
  /** cuda; cpu only to smoke-test this script (no graph step). */
  backend: string;
  /** random-presets name; tiny only to smoke-test this script. */
  preset: string;
  moe: number[];
  conc: number[];
  inputLen: number;
  outputLen: number;
  waves: number;
  minPrompts: number;
  serveArgs: string[];
  work: string;
  out: string;
}

async function loadBench(o: Opts, loadDir: string): Promise<unknown> {
  if (!existsSync(join(loadDir, 'model.safetensors.index.json'))) {
    const t0 = performance.now();
    await runNode(
      [CLI, 'init-random', '--config', 'minimax-m3', '--num-layers', '4', '--out', loadDir],
      'init-random',
    );
    console.log(
      `init-random wrote ${loadDir} in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
    );
  }
  const json = join(o.work, 'load.json');
  await runNode(
    [join(HERE, 'load-bench.js'), '--model', loadDir, '--repeat', '2', '--json', json],
    'load bench',
  );
  return JSON.parse(readFileSync(json, 'utf8'));
}

async function main(): Promise<void> {
  const o: Opts = {
    backend: arg('backend', 'cuda'),
    preset: arg('preset', 'minimax-m3'),
    moe: list(arg('moe-layers', '1,5')),
    conc: list(arg('concurrency', '1,8,32,64')),
    inputLen: Number(arg('input-len', '1024')),
    outputLen: Number(arg('output-len', '256')),
    waves: Number(arg('waves', '3')),
    minPrompts: Number(arg('min-prompts', '8')),
    serveArgs: arg('serve-args', '').split(' ').filter(Boolean),
    work: arg('work', join(tmpdir(), 'moeserve-serve-gpu-bench')),
    out: arg('out', process.env['OUT'] ?? '.'),
  };
  mkdirSync(o.work, { recursive: true });
  mkdirSync(o.out, { recursive: true });
  const result: Record<string, unknown> = {
    options: o,
    date: new Date().toISOString(),
    models: [],
  };
  const md: string[] = [];
  const save = () => {
    writeFileSync(join(o.out, 'serve-gpu-bench.json'), JSON.stringify(result, null, 2));
    writeFileSync(join(o.out, 'serve-gpu-bench.md'), md.join('\n'));
  };
  for (const n of o.moe) {
    const m = await benchModel(n, o);
    (result['models'] as unknown[]).push(m);
    md.push(table(m.title, m.rows), `Server load: ${m.load}`, '');
    save();
  }
  if (!process.argv.includes('--skip-load')) {
    const load = await loadBench(o, arg('load-dir', join(tmpdir(), 'moeserve-m3-4layer')));
    result['load'] = load;
    const runs = (load as { runs: { bytes: number; seconds: number; gbPerS: number }[] }).runs;
    md.push(
      '### Loading a 4-layer real-dimension checkpoint (init-random, bf16, local disk, warm page cache)',
      '',
      ...runs.map(
        (r, i) =>
          `- load ${i + 1}: ${(r.bytes / 1e9).toFixed(2)} GB in ${r.seconds.toFixed(1)} s = ${r.gbPerS.toFixed(2)} GB/s`,
      ),
      '',
    );
    save();
  }
  console.log(`\n${md.join('\n')}`);
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 2;
});
