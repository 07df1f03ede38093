import { copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { goldenCase } from '../../test/golden-dir.js';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
import type { ForwardBatch } from '../backend/forward-batch.js';
import { loadModel } from '../model/load-model.js';
import { HostSamplingRunner } from './host-sampling-runner.js';
import { LlmEngine } from './llm-engine.js';
import { M3ModelRunner } from './m3-model-runner.js';
import { collect, makeRequest, randomPrompt } from './test-helpers.js';
import { ThreadModelRunner } from './thread-model-runner.js';

// The model on its own thread (what `serve --backend cpu` runs) against the same checkpoint
// in-process: the same logits bit for bit, the same greedy tokens through the engine (which
// now overlaps each forward with the host work of the step before), and errors that name
// their cause without breaking the runner.
const DIR = goldenCase('tiny-moe');
const PAGES = 64;

describe.skipIf(!existsSync(DIR))('ThreadModelRunner (tiny MiniMax-M3, CPU)', async () => {
  const local = new M3ModelRunner(await loadModel(DIR, { backend: new CpuBackend() }), {
    numPages: PAGES,
    maxModelLen: 256,
  });
  const spec = { dir: DIR, cpuThreads: 2, quantization: null, numPages: PAGES, maxModelLen: 256 };
  const threaded = await ThreadModelRunner.start(spec);
  afterAll(() => threaded.close());

  const prompt = Int32Array.from(randomPrompt(1, 9, 256));
  const prefill: ForwardBatch = {
    tokenIds: prompt,
    seqs: [{ numCached: 0, numNew: prompt.length, pageTable: Int32Array.from([0, 1, 2]) }],
    pageSize: local.pageSize,
    logitsFor: 'all',
    captureRoutedExperts: true,
  };
  const decode: ForwardBatch = {
    tokenIds: Int32Array.from([7]),
    seqs: [{ numCached: prompt.length, numNew: 1, pageTable: Int32Array.from([0, 1, 2]) }],
    pageSize: local.pageSize,
    logitsFor: 'last',
  };

  it('reports the in-process runner facts', () => {
    expect(threaded.overlapsHost).toBe(true);
    expect(new HostSamplingRunner(threaded).overlapsHost).toBe(true);
    expect(new HostSamplingRunner(local).overlapsHost).toBe(false);
    for (const k of ['vocabSize', 'numPages', 'pageSize', 'maxModelLen'] as const)
      expect(threaded[k], k).toBe(local[k]);
    expect(threaded.eosTokenIds).toEqual(local.eosTokenIds);
    expect(threaded.memory).toEqual(local.memory);
  });

  it('computes the in-process logits and routes, bit for bit', async () => {
    for (const batch of [prefill, decode]) {
      const [a, b] = [await local.forward(batch), await threaded.forward(batch)];
      expect(b.logits.length).toBe(a.logits.length);
      expect(Buffer.from(b.logits.buffer).equals(Buffer.from(a.logits.buffer))).toBe(true);
      expect(b.routedExperts).toEqual(a.routedExperts);
    }
  });

  it('answers forwards asked for together in order', async () => {
    const outs = await Promise.all([threaded.forward(prefill), threaded.forward(decode)]);
    const ref = [await local.forward(prefill), await local.forward(decode)];
    expect(outs.map((o) => Array.from(o.logits))).toEqual(ref.map((o) => Array.from(o.logits)));
  });

  it('names a failed forward and keeps serving', async () => {
    const bad: ForwardBatch = {
      ...decode,
      seqs: [{ ...decode.seqs[0]!, pageTable: new Int32Array(0) }],
    };
    await expect(threaded.forward(bad)).rejects.toThrow(/page/i);
    const again = await threaded.forward(decode);
    expect(Array.from(again.logits)).toEqual(Array.from((await local.forward(decode)).logits));
  });

  it('gives the in-process greedy tokens through the engine', async () => {
    const reqs = Array.from({ length: 4 }, (_, i) =>
      makeRequest(`t${i}`, randomPrompt(i, 5 + 6 * i, 256), { maxTokens: 10, ignoreEos: true }),
    );
    const run = async (e: LlmEngine) => {
      const out = await Promise.all(reqs.map((r) => collect(e, r)));
      await e.shutdown();
      return out.map((g) => g.tokens);
    };
    const fresh = await ThreadModelRunner.start(spec);
    const want = await run(new LlmEngine(new HostSamplingRunner(local), { checkIntegrity: true }));
    const got = await run(new LlmEngine(new HostSamplingRunner(fresh), { checkIntegrity: true }));
    expect(got).toEqual(want);
    expect(want.every((t) => t.length === 10)).toBe(true);
  });

  it('reports a thread that dies, and fails later forwards with the reason', async () => {
    const r = await ThreadModelRunner.start(spec);
    await (r as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    await expect(r.failed).rejects.toThrow(/model thread exited/);
    await expect(r.forward(decode)).rejects.toThrow(/model thread exited/);
  });

  it('does not report a thread ended by close', async () => {
    const r = await ThreadModelRunner.start(spec);
    await r.close();
    const settled = await Promise.race([
      r.failed.then(
        () => 'resolved',
        () => 'rejected',
      ),
      new Promise((resolve) => setTimeout(() => resolve('pending'), 200)),
    ]);
    expect(settled).toBe('pending');
  });

  it('names a checkpoint that cannot load, under the error class the loader threw', async () => {
    await expect(ThreadModelRunner.start({ ...spec, dir: `${DIR}-missing` })).rejects.toThrow(
      /missing/,
    );
    const bad = mkdtempSync(join(tmpdir(), 'thread-runner-'));
    copyFileSync(join(DIR, 'config.json'), join(bad, 'config.json'));
    writeFileSync(
      join(bad, 'model.safetensors'),
      readFileSync(join(DIR, 'model.safetensors')).subarray(0, 100),
    );
    const err = (await ThreadModelRunner.start({ ...spec, dir: bad }).catch((e) => e)) as Error;
    expect(err.name).toBe('SafetensorsError');
    expect(err.message).toMatch(/model\.safetensors.*truncated/);
  });
});
