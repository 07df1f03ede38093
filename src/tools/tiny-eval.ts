import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { loadTinyEvalSet, runTinyEval, tinyEvalTable } from '../eval/tiny-eval.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const HELP = `npm run eval:tiny -- [options]

The bundled model's eval (issue 18): held-out arithmetic phrasings, tool-call schema validity,
tool loops reaching a final answer, chat sanity, stop rate and single-stream speed, all at
temperature 0, one request at a time. Without --base-url it starts \`moeserve serve\` (what
\`npm start\` runs) on 127.0.0.1 and stops it at the end.

  --base-url URL     an already running server (default: start one)
  --model DIR        checkpoint for the started server (default: the bundled tiny model)
  --quantization Q   passed to the started server (fp8: issue 13's block-FP8 weights)
  --port N           port for the started server (default: 8391)
  --set FILE         the held-out set (default: data/tiny-m3/eval-tiny.json)
  --limit N          at most N items of each part (default: all)
  --max-tokens N     max_tokens per request (default: 512)
  --output FILE      JSON report (default: eval-tiny.json)`;

async function waitHealthy(base: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with code ${child.exitCode}`);
    try {
      if ((await fetch(`${base}/health`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('server not healthy after 120 s');
}

function startServer(
  port: number,
  model: string | undefined,
  quantization: string | undefined,
): ChildProcess {
  const args = [`${ROOT}dist/cli/main.js`, 'serve', '--host', '127.0.0.1', '--port', String(port)];
  if (model) args.push('--model', model);
  if (quantization) args.push('--quantization', quantization);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  return child;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'base-url': { type: 'string' },
      model: { type: 'string' },
      quantization: { type: 'string' },
      port: { type: 'string', default: '8391' },
      set: { type: 'string', default: `${ROOT}data/tiny-m3/eval-tiny.json` },
      limit: { type: 'string' },
      'max-tokens': { type: 'string', default: '512' },
      output: { type: 'string', default: 'eval-tiny.json' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  const set = loadTinyEvalSet(values.set);
  let child: ChildProcess | undefined;
  let base = values['base-url'];
  if (!base) {
    base = `http://127.0.0.1:${values.port}`;
    child = startServer(Number(values.port), values.model, values.quantization);
    await waitHealthy(base, child);
  }
  try {
    const models = (await (await fetch(`${base}/v1/models`)).json()) as { data: { id: string }[] };
    const model = models.data[0]?.id ?? 'moeserve-tiny-m3';
    const t0 = Date.now();
    const report = await runTinyEval(set, {
      endpoint: { baseUrl: base, timeoutMs: 300_000 },
      model,
      maxTokens: Number(values['max-tokens']),
      ...(values.limit !== undefined && { limit: Number(values.limit) }),
      onProgress: (part, done, todo) => {
        if (done === todo || done % 25 === 0) console.error(`${part}: ${done}/${todo}`);
      },
    });
    const out = {
      model,
      set: values.set,
      ...(values.quantization !== undefined && { quantization: values.quantization }),
      date: new Date().toISOString(),
      seconds: (Date.now() - t0) / 1000,
      ...report,
    };
    mkdirSync(dirname(values.output) || '.', { recursive: true });
    writeFileSync(values.output, JSON.stringify(out, null, 1) + '\n');
    console.log(tinyEvalTable(report));
    console.log(`report: ${values.output}`);
  } finally {
    child?.kill('SIGTERM');
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    console.error(`eval:tiny: ${(e as Error).message}`);
    process.exitCode = 1;
  });
}
