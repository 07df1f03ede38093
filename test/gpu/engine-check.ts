/**
 * Issue 11: greedy tokens through the engine (what the server drives) on every golden case, three ways: the CUDA
 * runner with CUDA graphs (sampling on the GPU), the same with --enforce-eager, and the CPU
 * backend (host sampler). CUDA runs in f32 mode. Five concurrent requests make decode batches
 * of 1..5 sequences, so graphs of padded sizes 1, 2, 4 and 8 are replayed.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import type { Backend } from '../../src/backend/backend.js';
import { CudaStepRunner } from '../../src/engine/cuda-step-runner.js';
import { HostSamplingRunner } from '../../src/engine/host-sampling-runner.js';
import { LlmEngine } from '../../src/engine/llm-engine.js';
import { M3ModelRunner } from '../../src/engine/m3-model-runner.js';
import { loadModel } from '../../src/model/load-model.js';
import { makeRequest } from '../../src/engine/test-helpers.js';
import type { Row } from './check-util.js';

const MAX_TOKENS = 24;

async function serveGreedy(
  dir: string,
  backend: Backend,
  enforceEager: boolean,
  prompts: number[][],
): Promise<{ tokens: number[][]; graphSteps: number; eagerSteps: number }> {
  const runner = new M3ModelRunner(await loadModel(dir, { backend }), { numPages: 64 });
  const step =
    backend.name === 'cuda'
      ? new CudaStepRunner(runner, { enforceEager, maxNumSeqs: 8 })
      : new HostSamplingRunner(runner);
  const engine = new LlmEngine(step, { maxNumSeqs: 8 });
  try {
    const tokens = await Promise.all(
      prompts.map(async (promptIds, i) => {
        const ids: number[] = [];
        const req = makeRequest(`g${i}`, promptIds, { maxTokens: MAX_TOKENS, ignoreEos: true });
        for await (const ev of engine.generate(req)) {
          if (ev.type === 'token') ids.push(ev.tokenId);
          if (ev.type === 'error') throw new Error(ev.message);
        }
        return ids;
      }),
    );
    const counts = step instanceof CudaStepRunner ? step.counts : { graphSteps: 0, eagerSteps: 0 };
    return { tokens, ...counts };
  } finally {
    await engine.shutdown();
  }
}

export async function checkEngineGreedy(goldenDir: string, gpu32: Backend): Promise<Row[]> {
  const rows: Row[] = [];
  for (const name of readdirSync(goldenDir).sort()) {
    const dir = join(goldenDir, name);
    if (!existsSync(join(dir, 'expect.json'))) continue;
    try {
      const { ids } = JSON.parse(readFileSync(join(dir, 'expect.json'), 'utf8')) as {
        ids: number[];
      };
      const prompts = [3, 7, 12, 17, ids.length].map((n) => ids.slice(0, n));
      const cpu = await serveGreedy(dir, new CpuBackend(), false, prompts);
      const graphs = await serveGreedy(dir, gpu32, false, prompts);
      const eager = await serveGreedy(dir, gpu32, true, prompts);
      const flat = (a: { tokens: number[][] }) => a.tokens.map((r) => r.join(',')).join(' | ');
      const lengthsOk = cpu.tokens.every((r) => r.length === MAX_TOKENS);
      const same = flat(graphs) === flat(cpu) && flat(eager) === flat(cpu);
      // The graph run must really replay graphs, the eager one never.
      const usedGraphs = graphs.graphSteps > 0 && eager.graphSteps === 0;
      const pass = lengthsOk && same && usedGraphs;
      if (!pass)
        console.error(
          `${name}:\n cpu    ${flat(cpu)}\n graphs ${flat(graphs)}\n eager  ${flat(eager)}`,
        );
      rows.push({
        check: `${name}: engine greedy tokens, CUDA graphs / --enforce-eager / CPU`,
        value: `${same ? 'identical' : 'differ'}; graph steps ${graphs.graphSteps} (eager ${graphs.eagerSteps})`,
        limit: 'identical, graph steps > 0',
        pass,
      });
    } catch (e) {
      console.error(`${name}: ${(e as Error).stack ?? String(e)}`);
      rows.push({ check: `${name}: served greedy`, value: 'error', limit: '-', pass: false });
    }
  }
  return rows;
}
