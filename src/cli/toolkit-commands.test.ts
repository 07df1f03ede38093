import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Script } from '../bench/scripted-reply.js';
import { ScriptedServer } from '../bench/scripted-server.js';
import { helpText, runCommand, type Command } from './command.js';
import { COMMANDS } from './commands.js';
import { compareCommand } from './compare-command.js';
import { evalGsm8kCommand } from './eval-gsm8k-command.js';
import { evalStopRateCommand } from './eval-stop-rate-command.js';
import { evalToolLoopCommand } from './eval-tool-loop-command.js';

const dir = mkdtempSync(join(tmpdir(), 'toolkit-'));
let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  vi.restoreAllMocks();
});

async function runQuiet(cmd: Command, argv: string[]): Promise<{ rc: number; out: string }> {
  const lines: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((s: unknown) => void lines.push(String(s)));
  vi.spyOn(process.stdout, 'write').mockImplementation((s: unknown) => lines.push(String(s)) > 0);
  const rc = await runCommand(cmd, argv);
  vi.restoreAllMocks();
  return { rc, out: lines.join('\n') };
}

function gsmFile(n: number): string {
  const path = join(dir, `gsm-${n}.jsonl`);
  const rows = Array.from({ length: n }, (_, i) =>
    JSON.stringify({ question: `Q${i}`, answer: `#### ${i}` }),
  );
  writeFileSync(path, rows.join('\n') + '\n');
  return path;
}

describe('toolkit commands', () => {
  it('each has --help naming its flags', () => {
    expect(helpText(evalStopRateCommand)).toMatch(/--output PATH .*summary\.json/);
    expect(helpText(evalGsm8kCommand)).toMatch(
      /--num-fewshot K .*default 5, 0 for moeserve-tiny-m3/,
    );
    expect(helpText(evalToolLoopCommand)).toMatch(/--runs N .*\(default: 3\)/);
    expect(helpText(compareCommand)).toMatch(/^moeserve compare LABEL=RUNS\.jsonl/);
  });

  it('eval stop-rate writes the artifact pair and prints the seed lines', async () => {
    const script: Script = ({ index }) => ({
      content: [`#### ${index % 2}`],
      finishReason: index === 2 ? 'length' : 'stop',
    });
    server = await ScriptedServer.start(script);
    const output = join(dir, 'smoke.jsonl');
    const { rc, out } = await runQuiet(evalStopRateCommand, [
      ...[
        '--base-url',
        server.url,
        '--dataset',
        gsmFile(4),
        '--output',
        output,
        '--concurrency',
        '1',
      ],
      ...['--min-stop-rate-pct', '90'],
    ]);
    expect(rc).toBe(1);
    expect(out).toContain('n_total=4, n_ok=4, n_err=0');
    expect(out).toContain('stop_rate_pct=75.0');
    expect(out).toContain('runaway #2:');
    expect(existsSync(`${output}.summary.json`)).toBe(true);
    expect(server.requests[0]?.body['model']).toBe('scripted');
  });

  it('eval gsm8k prints both filters', async () => {
    server = await ScriptedServer.start(() => ({ content: ['#### 0'] }));
    const { rc, out } = await runQuiet(evalGsm8kCommand, [
      ...['--base-url', server.url, '--model', 'm', '--dataset', gsmFile(2)],
      ...['--fewshot-dataset', gsmFile(3), '--num-fewshot', '2'],
    ]);
    expect(rc).toBe(0);
    expect(out).toContain('|gsm8k|3|strict-match|2|exact_match|↑|0.5000|±|0.5000|');
    expect(String(server.requests[0]?.body['prompt'])).toMatch(
      /^Question: Q0\nAnswer: #### 0\n\nQuestion: Q1/,
    );
  });

  it('eval tool-loop runs a scenario file and fails on a looping model', async () => {
    const scenario = {
      name: 'one-tool',
      task: 'Call ping once, then say done.',
      tools: [
        { name: 'ping', description: 'p', parameters: { type: 'object' }, results: [{ ok: true }] },
      ],
      maxTurns: 4,
    };
    const path = join(dir, 'one-tool.json');
    writeFileSync(path, JSON.stringify(scenario));
    server = await ScriptedServer.start(() => ({
      content: [],
      toolCalls: [{ name: 'ping', arguments: '{}' }],
    }));
    const out = join(dir, 'runs.json');
    const r = await runQuiet(evalToolLoopCommand, [
      '--base-url',
      server.url,
      '--scenario',
      path,
      '--runs',
      '2',
      '--output',
      out,
    ]);
    expect(r.rc).toBe(1);
    expect(r.out).toContain('## one-tool: 0/2 runs reached a clean final answer');
    expect(r.out).toContain('| repeated identical calls | 3 | 3 |');
    const saved = JSON.parse(readFileSync(out, 'utf8')) as { runs: unknown[] };
    expect(saved.runs).toHaveLength(2);
  });

  it('compare writes Markdown and SVG', async () => {
    const row = (c: number, t: number) =>
      JSON.stringify({ max_concurrency: c, output_throughput: t, median_tpot_ms: 1000 / t });
    writeFileSync(join(dir, 'a.jsonl'), [row(1, 100), row(1, 102), row(8, 700)].join('\n'));
    writeFileSync(join(dir, 'b.jsonl'), [row(1, 101), row(8, 800), row(8, 810)].join('\n'));
    const svg = join(dir, 'c.svg');
    const { rc, out } = await runQuiet(compareCommand, [
      `A=${join(dir, 'a.jsonl')}`,
      `B=${join(dir, 'b.jsonl')}`,
      '--svg',
      svg,
    ]);
    expect(rc).toBe(0);
    expect(out).toContain('| Output throughput | 1 | B | +0.00 tok/s | +0.00% | tie |');
    expect(out).not.toContain('Mean TPOT');
    expect(out).toContain('| Output throughput | 8 | B | +105 tok/s | +15.00% | better |');
    expect(readFileSync(svg, 'utf8')).toContain('</svg>');
  });

  it('compare ends with a one-line summary on stderr', async () => {
    const row = (c: number, t: number) =>
      JSON.stringify({ max_concurrency: c, output_throughput: t });
    writeFileSync(join(dir, 'p.jsonl'), [row(1, 100), row(8, 700)].join('\n'));
    writeFileSync(join(dir, 'q.jsonl'), [row(1, 90), row(8, 800)].join('\n'));
    const md = join(dir, 'pq.md');
    const printed: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((s: unknown) => void printed.push(String(s)));
    const { rc } = await runQuiet(compareCommand, [
      ...[`P=${join(dir, 'p.jsonl')}`, `Q=${join(dir, 'q.jsonl')}`, '--output', md],
    ]);
    expect(rc).toBe(0);
    expect(printed).toEqual([
      `compare: 2 arms vs P, 2 load points, 2 deltas: 1 better, 1 worse, 0 tie; wrote ${md}`,
    ]);
  });
});

describe('--help of every command', () => {
  it('says what each option is when it is not given', async () => {
    for (const [name, entry] of Object.entries(COMMANDS)) {
      const cmd = await entry.load();
      const text = helpText(cmd);
      for (const [flag, spec] of Object.entries(cmd.options)) {
        const line = text
          .split('\n')
          .find((l) => l.trimStart().startsWith(`--${flag} `) || l.trim() === `--${flag}`);
        expect(line, `${name} --${flag}`).toMatch(/default/i);
        if (spec.type === 'boolean' && spec.default !== true)
          expect(line, `${name} --${flag}`).toContain('(default: off)');
      }
    }
  });
});
