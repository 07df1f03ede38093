/**
 * moeserve against PyTorch on the same model and GPU, in one run (issue 12's comparison):
 *   npm run bench:vs-torch [-- --moe-layers 1] [--context 1024] [--batches 1,8,32,64]
 *     [--prefill 2048[,8192...]] [--compile 1] [--out DIR]
 * Runs bench/gpu-bench.js (--skip-check; graph-replayed decode, eager prefill) and then
 * bench/torch_reference.py (the same MiniMax-M3 dimensions in plain PyTorch: eager with SDPA
 * attention, and torch.compile mode="reduce-overhead" for decode unless --compile 0), each in
 * its own process so the GPU is free for the next, and prints one table of both with ratios.
 * Writes vs-torch.json / vs-torch.md under --out ($OUT or .); the two tools' own files go to
 * --out/moeserve and --out/torch.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url)); // dist/gpu/bench
const TORCH = join(HERE, '../../../bench/torch_reference.py');

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
}

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} ${args[0]} exited with code ${code}`)),
    );
  });
}

interface Ours {
  prefill: { tokens: number; ms: number; tflops: number }[];
  decode: { batch: number; graphMs: number; fraction: number }[];
}
interface Torch {
  torch: string;
  prefill: { tokens: number; ms: number }[];
  eager: Record<string, number>;
  compiled: Record<string, { ms: number }>;
}

function table(o: Ours, t: Torch, layers: string): string {
  const f = (x: number | undefined, d = 2) => (x === undefined ? '-' : x.toFixed(d));
  const prefills = o.prefill.map((p) => {
    const e = t.prefill.find((q) => q.tokens === p.tokens)?.ms;
    return (
      `Prefill ${p.tokens} tokens: moeserve ${f(p.ms, 1)} ms (${f(p.tflops, 0)} TFLOP/s), ` +
      `PyTorch eager ${f(e, 1)} ms: moeserve ${f((e ?? NaN) / p.ms)}× faster.`
    );
  });
  const lines = [
    `### MiniMax-M3 dimensions, 3 dense + ${layers} MoE layers, torch ${t.torch}`,
    '',
    ...prefills,
    '',
    '| batch | moeserve graph ms | roofline | torch eager ms | torch.compile ms | eager / moeserve | compile / moeserve |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const r of o.decode) {
    const e = t.eager[String(r.batch)];
    const c = t.compiled[String(r.batch)]?.ms;
    lines.push(
      `| ${r.batch} | ${f(r.graphMs, 3)} | ${(100 * r.fraction).toFixed(0)}% | ${f(e)} | ${f(c)} | ${f(e === undefined ? undefined : e / r.graphMs)} | ${f(c === undefined ? undefined : c / r.graphMs)} |`,
    );
  }
  return lines.concat('').join('\n');
}

async function main(): Promise<void> {
  const out = arg('out', process.env['OUT'] ?? '.');
  const common = {
    'moe-layers': arg('moe-layers', '1'),
    context: arg('context', '1024'),
    batches: arg('batches', '1,8,32,64'),
    prefill: arg('prefill', '2048'),
  };
  const flags = Object.entries(common).flatMap(([k, v]) => [`--${k}`, v]);
  const oursDir = join(out, 'moeserve');
  const torchDir = join(out, 'torch');
  mkdirSync(oursDir, { recursive: true });
  mkdirSync(torchDir, { recursive: true });
  await run(process.execPath, [
    join(HERE, 'gpu-bench.js'),
    ...flags,
    '--skip-check',
    '--out',
    oursDir,
  ]);
  const python = process.env['PYTHON'] ?? 'python3';
  await run(python, [TORCH, ...flags, '--compile', arg('compile', '1'), '--out', torchDir]);
  const ours = JSON.parse(readFileSync(join(oursDir, 'gpu-bench.json'), 'utf8')) as Ours;
  const torch = JSON.parse(readFileSync(join(torchDir, 'torch-reference.json'), 'utf8')) as Torch;
  const md = table(ours, torch, common['moe-layers']);
  writeFileSync(
    join(out, 'vs-torch.json'),
    JSON.stringify({ options: common, ours, torch }, null, 2),
  );
  writeFileSync(join(out, 'vs-torch.md'), md);
  console.log(`\n${md}`);
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 2;
});
