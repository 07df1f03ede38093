/**
 * Long prompts through the server, on the GPU machine (issue 12):
 *   npm run bench:long-serve [-- --contexts 8192,32768,100000,max] [--chunks 2048,8192]
 *     [--moe-layers 1] [--output-len 64] [--stall-context 32768] [--decode-streams 4] [--stream-tokens 1500]
 *     [--out DIR] [--serve-args "--flag value ..."]
 *   (--backend cpu --preset tiny --contexts 512,2048 smoke-tests the script without a GPU)
 * For each prefill chunk C (`--max-num-batched-tokens C`), one `moeserve serve --backend cuda
 * --load-format dummy` of MiniMax-M3 dimensions (3 dense + N MoE layers; `max` is the model's
 * longest prompt, max_position_embeddings − output) and, against it:
 *  1. each context alone: TTFT and decode ms/token of one streamed completion of exactly L
 *     byte tokens (random letters), ignore_eos, greedy;
 *  2. the stall: S short streams decoding, then one --stall-context prompt arrives. The longest
 *     gap between two tokens of a running stream while the long prompt prefills is compared
 *     with the time of one chunk (TTFT / chunks), which is what chunked prefill promises.
 * Prints one table per chunk and writes long-serve-bench.json / .md under --out ($OUT or .).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { streamRequest, type StreamRecord } from '../src/bench/openai-stream-request.js';
import { SeededRng } from '../src/bench/seeded-rng.js';
import { PRESETS, withNumLayers } from '../src/model/weights/random-presets.js';
import { startServer, type Server } from './serve-process.js';

const HERE = dirname(fileURLToPath(import.meta.url)); // dist/gpu/bench
const CLI = join(HERE, '../../cli/main.js');

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
}

interface ContextRow {
  context: number;
  promptTokens: number;
  ttftMs: number;
  decodeMsPerToken: number;
}

interface StallRow {
  context: number;
  streams: number;
  chunks: number;
  longTtftMs: number;
  /** TTFT of the long prompt over its number of chunks. */
  chunkMs: number;
  /** Median gap between tokens of the running streams outside the long prefill. */
  itlP50Ms: number;
  /** Longest gap between two tokens of a running stream during the long prefill. */
  maxGapMs: number;
  /**
   * Tokens each running stream received while the long prompt prefilled: at least one per
   * chunk when every step carries one chunk beside the decodes (no step stalls them longer).
   */
  tokensPerStreamDuring: number;
}

const letters = (n: number, rng: SeededRng): string =>
  Array.from({ length: n }, () => String.fromCharCode(97 + rng.int(0, 25))).join('');

function request(url: string, prompt: string, maxTokens: number): Promise<StreamRecord> {
  return streamRequest({
    baseUrl: url,
    backend: 'openai',
    model: 'bench',
    prompt,
    maxTokens,
    temperature: 0,
    ignoreEos: true,
    timeoutMs: 900_000,
  });
}

function checked(rec: StreamRecord, what: string): StreamRecord {
  if (!rec.success) throw new Error(`${what}: ${rec.error}`);
  return rec;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[(s.length - 1) >> 1]!;
};

async function contextRow(url: string, L: number, out: number, rng: SeededRng) {
  const rec = checked(await request(url, letters(L, rng), out), `context ${L}`);
  const t = rec.textTimes;
  const row: ContextRow = {
    context: L,
    promptTokens: rec.promptTokens ?? L,
    ttftMs: t[0]! - rec.startMs,
    decodeMsPerToken: (t[t.length - 1]! - t[0]!) / Math.max(1, t.length - 1),
  };
  console.log(`context ${L}: ${JSON.stringify(row)}`);
  return row;
}

interface StallOpts {
  url: string;
  context: number;
  streams: number;
  chunk: number;
  /** Output length of each running stream: long enough to outlast the long prefill. */
  streamTokens: number;
}

/** S streams decoding; once they run, the long prompt arrives; gaps measured afterwards. */
async function stallRow(o: StallOpts, rng: SeededRng): Promise<StallRow> {
  const { url, context: L, streams: S, chunk } = o;
  const short = Array.from({ length: S }, () => request(url, letters(128, rng), o.streamTokens));
  await new Promise((r) => setTimeout(r, 1500));
  const long = checked(await request(url, letters(L, rng), 4), `stall prompt ${L}`);
  const streams = (await Promise.all(short)).map((r, i) => checked(r, `decode stream ${i}`));
  const from = long.startMs;
  const to = long.textTimes[0]!;
  const during: number[] = [];
  const outside: number[] = [];
  for (const s of streams) {
    const t = s.textTimes;
    for (let i = 1; i < t.length; i++) {
      const gap = t[i]! - t[i - 1]!;
      (t[i]! > from && t[i - 1]! < to ? during : outside).push(gap);
    }
  }
  if (during.length === 0) throw new Error('the decode streams ended before the long prompt');
  const chunks = Math.ceil(L / chunk);
  const row: StallRow = {
    context: L,
    streams: S,
    chunks,
    longTtftMs: to - from,
    chunkMs: (to - from) / chunks,
    itlP50Ms: median(outside),
    maxGapMs: Math.max(...during),
    tokensPerStreamDuring: during.length / S,
  };
  console.log(`stall: ${JSON.stringify(row)}`);
  return row;
}

function tables(chunk: number, rows: ContextRow[], stall: StallRow): string {
  const f = (x: number, d = 1) => x.toFixed(d);
  return [
    `### --max-num-batched-tokens ${chunk}`,
    '',
    '| context | prompt tokens | TTFT ms | TTFT / linear from first | decode ms/token | decode / first |',
    '|---|---|---|---|---|---|',
    ...rows.map((r) => {
      const lin = r.ttftMs / ((rows[0]!.ttftMs * r.context) / rows[0]!.context);
      const dec = r.decodeMsPerToken / rows[0]!.decodeMsPerToken;
      return `| ${r.context} | ${r.promptTokens} | ${f(r.ttftMs)} | ${f(lin, 2)} | ${f(r.decodeMsPerToken, 3)} | ${f(dec, 2)} |`;
    }),
    '',
    `Stall: ${stall.streams} streams decoding when a ${stall.context}-token prompt arrives ` +
      `(${stall.chunks} chunks, TTFT ${f(stall.longTtftMs)} ms = ${f(stall.chunkMs)} ms per chunk): ` +
      `longest gap between their tokens ${f(stall.maxGapMs)} ms ` +
      `(${f(stall.maxGapMs / stall.chunkMs, 2)} × the mean chunk; later chunks attend to more keys), ` +
      `${f(stall.tokensPerStreamDuring)} tokens per stream meanwhile, median gap otherwise ${f(stall.itlP50Ms, 2)} ms.`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const backend = arg('backend', 'cuda');
  const raw = withNumLayers(
    PRESETS[arg('preset', 'minimax-m3')]!(),
    3 + Number(arg('moe-layers', '1')),
  );
  const out = Number(arg('output-len', '64'));
  const longest = (raw['max_position_embeddings'] as number) - out;
  const contexts = arg('contexts', '8192,32768,100000,max')
    .split(',')
    .map((c) => (c === 'max' ? longest : Number(c)));
  const chunks = arg('chunks', '2048,8192').split(',').map(Number);
  const S = Number(arg('decode-streams', '4'));
  const stallL = Number(arg('stall-context', '32768'));
  const outDir = arg('out', process.env['OUT'] ?? '.');
  const dir = join(tmpdir(), 'moeserve-long-serve-bench');
  mkdirSync(dir, { recursive: true });
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(raw, null, 2));
  const maxLen = Math.max(...contexts, stallL) + out;
  const serveArgs = arg('serve-args', '').split(' ').filter(Boolean);
  const result: { date: string; runs: unknown[] } = { date: new Date().toISOString(), runs: [] };
  const md: string[] = [];
  for (const chunk of chunks) {
    const extra = ['--backend', backend, '--max-num-batched-tokens', String(chunk), ...serveArgs];
    const server: Server = await startServer(CLI, dir, S + 1, maxLen, extra);
    try {
      const rng = new SeededRng(chunk);
      await request(server.url, letters(256, rng), 8); // warm-up: kernels, workspaces
      const rows: ContextRow[] = [];
      for (const L of contexts) rows.push(await contextRow(server.url, L, out, rng));
      const stall = await stallRow(
        {
          url: server.url,
          context: stallL,
          streams: S,
          chunk,
          streamTokens: Math.min(Number(arg('stream-tokens', '1500')), maxLen - 128),
        },
        rng,
      );
      result.runs.push({ chunk, load: server.loadLine, rows, stall });
      md.push(tables(chunk, rows, stall));
      writeFileSync(join(outDir, 'long-serve-bench.json'), JSON.stringify(result, null, 2));
      writeFileSync(join(outDir, 'long-serve-bench.md'), md.join('\n'));
    } finally {
      await server.stop();
    }
  }
  console.log(`\n${md.join('\n')}`);
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 2;
});
