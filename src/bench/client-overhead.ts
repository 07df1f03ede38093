/**
 * Shows that the bench client is not the bottleneck: drives the scripted server (in a child
 * process, so it has its own core) with many concurrent streams and reports what the client
 * sustained and what it added per request. Run: `node dist/bench/client-overhead.js`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { BenchRequest } from './bench-dataset.js';
import { runBenchmark } from './bench-runner.js';
import { mean } from './stats.js';
import { ScriptedServer } from './scripted-server.js';

interface Scenario {
  name: string;
  streams: number;
  prompts: number;
  tokens: number;
  ttftMs: number;
  itlMs: number;
}

async function serveInChild(): Promise<void> {
  const [ttft, itl, tokens] = process.argv.slice(3).map(Number);
  const s = await ScriptedServer.start(() => ({ ttftMs: ttft, itlMs: itl, numTokens: tokens }), {
    keepLog: false,
  });
  process.send?.({ url: s.url });
  process.on('message', () => process.send?.({ cpu: process.cpuUsage() }));
}

function childCpuS(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    child.once('message', (m) => {
      const cpu = (m as { cpu: NodeJS.CpuUsage }).cpu;
      resolve((cpu.user + cpu.system) / 1e6);
    });
    child.send('cpu');
  });
}

function startChild(sc: Scenario): Promise<{ child: ChildProcess; url: string }> {
  const args = ['--server', String(sc.ttftMs), String(sc.itlMs), String(sc.tokens)];
  const child = fork(fileURLToPath(import.meta.url), args, { stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve({ child, url: (m as { url: string }).url }));
    child.once('error', reject);
  });
}

async function serverSpans(url: string): Promise<number[]> {
  const res = await fetch(`${url}/scripted/stats`);
  return ((await res.json()) as { spans_ms: number[] }).spans_ms;
}

async function measure(sc: Scenario) {
  const { child, url } = await startChild(sc);
  const requests: BenchRequest[] = Array.from({ length: sc.prompts }, (_, i) => ({
    prompt: `request ${i} ` + 'the quick brown fox '.repeat(8),
    promptLen: 34,
    outputLen: sc.tokens,
  }));
  const cfg = {
    ...{ baseUrl: url, backend: 'openai-chat' as const, model: 'scripted', requests },
    ...{ maxConcurrency: sc.streams, requestRate: Infinity, burstiness: 1, seed: 1 },
    ...{ warmupRequests: 0, ignoreEos: true, temperature: 0, timeoutMs: 60_000 },
    convention: 'sglang' as const,
  };
  await runBenchmark({ ...cfg, requests: requests.slice(0, sc.streams) }); // connection warm-up
  await serverSpans(url);
  const serverCpu0 = await childCpuS(child);
  const cpu0 = process.cpuUsage();
  const { metrics: m, ok } = await runBenchmark(cfg);
  const cpu = process.cpuUsage(cpu0);
  const serverCpuS = (await childCpuS(child)) - serverCpu0;
  const spans = await serverSpans(url);
  child.kill();
  const cpuS = (cpu.user + cpu.system) / 1e6;
  const chunks = ok.reduce((s, r) => s + 1 + r.timing.itl.length, 0);
  return {
    sc,
    m,
    // Each stream delivers `tokens` per TTFT + (tokens − 1)·ITL, back to back.
    ideal: (sc.streams * sc.tokens * 1000) / (sc.ttftMs + (sc.tokens - 1) * sc.itlMs),
    overheadMs: mean(ok.map((r) => r.timing.e2e * 1000)) - mean(spans),
    cpuUsPerRequest: (cpuS * 1e6) / m.completed,
    cpuUsPerChunk: (cpuS * 1e6) / chunks,
    cpuUtilPct: (100 * cpuS) / m.durationS,
    serverUtilPct: (100 * serverCpuS) / m.durationS,
  };
}

type Result = Awaited<ReturnType<typeof measure>>;

function row(r: Result): string {
  const { sc, m } = r;
  const cells = [
    sc.name,
    `${sc.streams} x ${sc.tokens} tok, TTFT ${sc.ttftMs} ms, ITL ${sc.itlMs} ms`,
    `${m.completed}/${sc.prompts}`,
    `${m.outputThroughput.toFixed(0)} (ideal ${r.ideal.toFixed(0)})`,
    String(m.maxConcurrentRequests),
    `${m.ttft.mean.toFixed(2)} / ${m.ttft.p99.toFixed(2)}`,
    `${m.tpot.mean.toFixed(3)} / ${m.tpot.p99.toFixed(3)}`,
    r.overheadMs.toFixed(2),
    `${r.cpuUsPerRequest.toFixed(0)} / ${r.cpuUsPerChunk.toFixed(1)}`,
    r.cpuUtilPct.toFixed(0),
    r.serverUtilPct.toFixed(0),
  ];
  return `| ${cells.join(' | ')} |`;
}

const HEAD = [
  'scenario',
  'load',
  'ok',
  'output tok/s',
  'peak streams',
  'TTFT mean / p99 (ms)',
  'TPOT mean / p99 (ms)',
  'E2E overhead (ms/req)',
  'client CPU (µs/req / µs/chunk)',
  'client CPU % of a core',
  'server CPU % of a core',
];

function report(results: readonly Result[]): string {
  return [
    `| ${HEAD.join(' | ')} |`,
    `|${HEAD.map(() => '---').join('|')}|`,
    ...results.map(row),
  ].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      streams: { type: 'string', default: '200' },
      tokens: { type: 'string', default: '200' },
      'itl-ms': { type: 'string', default: '20' },
      'ttft-ms': { type: 'string', default: '50' },
    },
  });
  const streams = Number(values.streams);
  const tokens = Number(values.tokens);
  const scenarios: Scenario[] = [
    {
      name: 'paced',
      streams,
      prompts: streams * 3,
      tokens,
      ttftMs: Number(values['ttft-ms']),
      itlMs: Number(values['itl-ms']),
    },
    { name: 'faster', streams, prompts: streams * 3, tokens, ttftMs: 20, itlMs: 5 },
  ];
  const results: Result[] = [];
  for (const sc of scenarios) results.push(await measure(sc));
  const load = loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
  console.log(
    `node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), load ${load}\n`,
  );
  console.log(report(results));
  const first = results[0];
  const pass = first && first.m.outputThroughput >= 2000 && first.m.maxConcurrentRequests >= 200;
  console.log(
    `\n${pass ? 'PASS' : 'FAIL'}: >= 2,000 output tok/s with 200 concurrent streams (${first?.sc.name})`,
  );
  if (!pass) process.exitCode = 1;
}

if (process.argv[2] === '--server') void serveInChild();
else
  main().catch((e: unknown) => {
    console.error(e);
    process.exitCode = 1;
  });
