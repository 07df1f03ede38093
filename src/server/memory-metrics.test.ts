import { describe, expect, it } from 'vitest';
import { goldenCase } from '../../test/golden-dir.js';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
import type { DType } from '../tensor/dtype.js';
import { HostSamplingRunner } from '../engine/host-sampling-runner.js';
import { LlmEngine } from '../engine/llm-engine.js';
import { M3ModelRunner } from '../engine/m3-model-runner.js';
import { kvBytesPerPage } from '../model/minimax-m3/kv-cache.js';
import { loadModel } from '../model/load-model.js';
import { modelTensors } from '../model/weights/weight-table.js';
import { ServerMetrics } from './server-metrics.js';

describe('weight and KV bytes by dtype', () => {
  it('the runner reports them and /metrics exposes them per dtype', async () => {
    const cpu = new CpuBackend();
    try {
      const model = await loadModel(goldenCase('tiny-moe'), { backend: cpu });
      const runner = new M3ModelRunner(model, { numPages: 10, maxModelLen: 40 });
      // The CPU backend stores every weight as float32: 4 bytes per parameter of the table.
      const params = modelTensors(model.cfg).reduce(
        (n, s) => n + s.shape.reduce((a, b) => a * b, 1),
        0,
      );
      expect(runner.memory.weightBytes).toEqual({ float32: 4 * params });
      const perPage = kvBytesPerPage(model.cfg, model.layout, runner.pageSize, 4);
      expect(runner.memory.kvCacheBytes).toEqual({ float32: 10 * perPage });
      const engine = new LlmEngine(new HostSamplingRunner(runner));
      const body = (await new ServerMetrics(engine, false).render()).body;
      expect(body).toContain(`moeserve_model_weight_bytes{dtype="float32"} ${4 * params}`);
      expect(body).toContain(`moeserve_kv_cache_bytes{dtype="float32"} ${10 * perPage}`);
      await engine.shutdown();
    } finally {
      cpu.close();
    }
  });

  it('an FP8 cache is sized and reported by its storage dtype (1 byte per element on CUDA)', async () => {
    // A CPU backend that reports E4M3 storage as the CUDA backend does (the real CPU keeps f32).
    class Fp8Storage extends CpuBackend {
      override storageDtype(d: DType): DType {
        return d === 'f8e4m3' ? d : super.storageDtype(d);
      }
    }
    const cpu = new Fp8Storage();
    try {
      const dir = goldenCase('tiny-moe');
      const budget = { kvCacheBytes: 2 ** 20 };
      const bf16 = new M3ModelRunner(await loadModel(dir, { backend: cpu }), budget);
      const fp8Model = await loadModel(dir, { backend: cpu, kvCacheDtype: 'fp8_e4m3' });
      const fp8 = new M3ModelRunner(fp8Model, budget);
      const perPage = kvBytesPerPage(fp8Model.cfg, fp8Model.layout, fp8.pageSize, 1);
      expect(fp8.numPages).toBe(Math.floor(2 ** 20 / perPage));
      expect(bf16.numPages).toBe(Math.floor(2 ** 20 / (4 * perPage))); // f32 here, 1 byte in FP8
      expect(fp8.memory.kvCacheBytes).toEqual({ fp8_e4m3: fp8.numPages * perPage });
      const engine = new LlmEngine(new HostSamplingRunner(fp8));
      const body = (await new ServerMetrics(engine, false).render()).body;
      expect(body).toContain(`moeserve_kv_cache_bytes{dtype="fp8_e4m3"} ${fp8.numPages * perPage}`);
      await engine.shutdown();
    } finally {
      cpu.close();
    }
  });
});
