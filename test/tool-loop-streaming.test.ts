import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_MODEL_DIR } from '../src/cli/serve-command.js';
import { generateData } from '../src/datagen/gen-data.js';
import { runToolLoop, type ToolLoopOptions } from '../src/eval/tool-loop.js';
import { loadScenario, type ToolScenario } from '../src/eval/tool-scenario.js';
import { serveModel } from './serve-model.js';

// Seed 002's failure showed in agent loops, and streaming tool-call parsing is where MiniMax
// users hurt most: on the bundled model (real tokenizer, template, parsers, engine), a
// streaming agent must see exactly the calls and answers a non-streaming one gets.
describe('eval tool-loop, streamed versus not, on the bundled model', () => {
  let url = '';
  let close: () => Promise<void> = async () => {};
  let scenarios: ToolScenario[] = [];

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'moeserve-scen-'));
    await generateData({ outDir: dir, seed: 20261129, numTrain: 1, numHeldout: 12 });
    const files = readdirSync(join(dir, 'tool-scenarios')).sort().slice(0, 6);
    scenarios = files.map((f) => loadScenario(join(dir, 'tool-scenarios', f)));
    const served = await serveModel(BUNDLED_MODEL_DIR);
    url = served.url;
    close = served.close;
  });
  afterAll(() => close());

  it('gives identical calls, arguments and final answers', async () => {
    const base: ToolLoopOptions = {
      endpoint: { baseUrl: url, timeoutMs: 60_000 },
      model: 'tiny',
      temperature: 0,
      maxTokens: 256,
    };
    let calls = 0;
    for (const sc of scenarios) {
      const plain = await runToolLoop(sc, base, 0);
      const streamed = await runToolLoop(sc, { ...base, stream: true }, 0);
      expect(streamed.error).toBeUndefined();
      expect(streamed.calls).toEqual(plain.calls);
      expect(streamed.finalContent).toBe(plain.finalContent);
      calls += plain.calls.length;
    }
    expect(calls).toBeGreaterThanOrEqual(scenarios.length - 1); // the model does call its tools
  });
});
