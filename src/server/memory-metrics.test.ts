import { describe, expect, it } from 'vitest';
import { goldenCase } from '../../test/golden-dir.js';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
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
});
