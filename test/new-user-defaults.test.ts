import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ScriptedServer } from '../src/bench/scripted-server.js';
import { runCommand, type Command } from '../src/cli/command.js';
import { benchServeCommand } from '../src/cli/bench-serve-command.js';
import { evalGsm8kCommand } from '../src/cli/eval-gsm8k-command.js';
import { evalStopRateCommand } from '../src/cli/eval-stop-rate-command.js';
import { evalToolLoopCommand, resolveScenarios } from '../src/cli/eval-tool-loop-command.js';
import { BUILTIN_SCENARIOS } from '../src/eval/scenarios/builtin-scenarios.js';
import { BUNDLED_MODEL_DIR } from '../src/cli/serve-command.js';
import { generateData } from '../src/datagen/gen-data.js';
import { ContextBudget } from '../src/eval/context-budget.js';
import { BUNDLED_MODEL_NAME, TINY_HELDOUT_GSM8K } from '../src/eval/eval-defaults.js';
import { serveModel, type ServedModel } from './serve-model.js';

// The evals as a new user runs them: against the bundled model served under its own name,
// with no flags but the URL. The defaults must resolve to the bundled data, and the stop-rate
// default of 8192 tokens (past the model's 4096-token context) must be clamped, not a 400.
const dir = mkdtempSync(join(tmpdir(), 'eval-defaults-'));
let served: ServedModel;
beforeAll(async () => {
  served = await serveModel(BUNDLED_MODEL_DIR, {}, BUNDLED_MODEL_NAME);
});
afterAll(async () => served.close());

async function run(cmd: Command, argv: string[]): Promise<{ rc: number; out: string }> {
  const lines: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((s: unknown) => void lines.push(String(s)));
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    return { rc: await runCommand(cmd, argv), out: lines.join('\n') };
  } finally {
    vi.restoreAllMocks();
  }
}

describe('eval defaults on the bundled model over HTTP', () => {
  it('eval stop-rate reads the bundled held-out set and clamps max-tokens to the context', async () => {
    const output = join(dir, 'stop.jsonl');
    const { rc, out } = await run(evalStopRateCommand, [
      ...['--base-url', served.url, '--num-examples', '4', '--output', output],
    ]);
    expect(out).toContain(`data/tiny-m3/heldout-gsm8k.jsonl (default for ${BUNDLED_MODEL_NAME})`);
    expect(out).toMatch(
      /note: max-tokens 8192 does not fit the model's context \(max_model_len 4096/,
    );
    expect(out).toContain('n_total=4, n_ok=4, n_err=0');
    expect(out).toMatch(/^total: 4 requests, \d stopped/m);
    const recs = readFileSync(output, 'utf8').trim().split('\n');
    expect(recs.map((l) => (JSON.parse(l) as { error?: string }).error)).toEqual(
      Array(4).fill(undefined),
    );
    expect(rc).toBe(0);
  });

  it('eval gsm8k takes chat mode, no shots and the held-out set for the bundled model', async () => {
    const { rc, out } = await run(evalGsm8kCommand, [
      '--base-url',
      served.url,
      '--num-examples',
      '3',
    ]);
    expect(out).toContain(`mode: chat, 0-shot (default for ${BUNDLED_MODEL_NAME})`);
    expect(out).toContain('mode=chat n=3 errors=0 invalid: strict=0');
    expect(out).toMatch(/^total: 3 questions, \d correct by strict-match/m);
    expect(rc).toBe(0);
  });

  it('eval tool-loop runs the held-out tool scenarios and prints a total', async () => {
    const { out } = await run(evalToolLoopCommand, [
      ...['--base-url', served.url, '--num-scenarios', '2', '--runs', '1'],
    ]);
    expect(out).toContain('## heldout-tool-000');
    expect(out).toContain('## heldout-tool-001');
    expect(out).toMatch(/^total: [0-2]\/2 runs passed .* over 2 scenarios/m);
  });

  it('clamps each request to max_model_len minus its own prompt tokens', async () => {
    const body = { model: BUNDLED_MODEL_NAME, messages: [{ role: 'user', content: 'Hi there' }] };
    const tok = (await (
      await fetch(`${served.url}/tokenize`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    ).json()) as { count: number; max_model_len: number };
    const notes: string[] = [];
    const budget = new ContextBudget({ baseUrl: served.url, timeoutMs: 10_000 }, 5000, (l) =>
      notes.push(l),
    );
    expect(await budget.maxTokens(body)).toBe(tok.max_model_len - tok.count);
    expect(await budget.maxTokens(body)).toBe(tok.max_model_len - tok.count);
    expect(notes).toHaveLength(1); // said once
    const small = new ContextBudget({ baseUrl: served.url, timeoutMs: 10_000 }, 16, () => {});
    expect(await small.maxTokens(body)).toBe(16);
  });

  it('asks for the requested value where the server has no /tokenize', async () => {
    const other = await ScriptedServer.start(() => ({ content: ['x'] }));
    try {
      const budget = new ContextBudget({ baseUrl: other.url, timeoutMs: 10_000 }, 8192, () => {});
      expect(await budget.maxTokens({ model: 'm', prompt: 'p' })).toBe(8192);
    } finally {
      await other.close();
    }
  });
});

describe('bundled held-out set', () => {
  it('is what gen-data writes for the bundled model', async () => {
    const out = join(dir, 'gen');
    await generateData({ outDir: out, seed: 20261129, numTrain: 0, numHeldout: 500 });
    expect(readFileSync(TINY_HELDOUT_GSM8K, 'utf8')).toBe(
      readFileSync(join(out, 'heldout-gsm8k.jsonl'), 'utf8'),
    );
  });
});

describe('eval tool-loop scenario sets', () => {
  it('defaults to the held-out tool conversations, with seed 002 behind --scenarios', () => {
    expect(resolveScenarios([]).map((s) => s.name)).toEqual(
      Array.from({ length: 8 }, (_, i) => `heldout-tool-00${i}`),
    );
    expect(resolveScenarios([], 'seed-002')).toEqual([...BUILTIN_SCENARIOS]);
    expect(resolveScenarios([], 'default', 3)).toHaveLength(3);
  });
});

describe('bench serve --dataset-name random on the bundled model over HTTP', () => {
  it("sends prompts of exactly --random-input-len tokens, by the server's own count", async () => {
    const out = join(dir, 'bench.jsonl');
    vi.spyOn(console, 'log').mockImplementation(() => {});
    vi.spyOn(console, 'error').mockImplementation(() => {});
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    let rc: number;
    try {
      rc = await runCommand(benchServeCommand, [
        ...['--base-url', served.url, '--num-prompts', '4', '--random-input-len', '200'],
        ...['--random-output-len', '2', '--random-range-ratio', '1', '--ignore-eos'],
        ...['--output-file', out],
      ]);
    } finally {
      vi.restoreAllMocks();
    }
    expect(rc).toBe(0);
    const rec = JSON.parse(readFileSync(out, 'utf8').trim()) as Record<string, number>;
    expect(rec['completed']).toBe(4);
    expect(rec['total_input_tokens']).toBe(4 * 200); // usage.prompt_tokens of /v1/completions
  });
});
