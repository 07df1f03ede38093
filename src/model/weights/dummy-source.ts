import { performance } from 'node:perf_hooks';
import type { Backend } from '../../backend/backend.js';
import type { ModelConfig } from '../../config/model-config.js';
import { mix32 } from '../../util/xoshiro128.js';
import { DTYPE_BYTES } from '../../tensor/dtype.js';
import { numel, sameShape, shapeStr } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { ReadOptions } from './checkpoint.js';
import type { LoadProgress } from './load-progress.js';
import { modelTensors, type WeightSpec } from './weight-table.js';
import { initOf } from './random-checkpoint.js';
import { fnv1a } from './random-source.js';
import type { LoadStats, WeightSource } from './weight-source.js';

/**
 * `--load-format dummy` (vLLM's flag): random weights of the config's shapes, made by the
 * backend itself (on the GPU for CUDA) with `init-random`'s scales (uniform with std
 * 1/√fan_in for linears and the LM head, 1 for the embedding, 0.05 for norms, 0.01 for
 * biases); no weight file is read. Values depend on (seed, tensor name, slice start) only and
 * are the same on the CPU and CUDA backends, so a seeded dummy model is reproducible.
 */
export class DummyWeightSource implements WeightSource {
  private readonly specs: ReadonlyMap<string, WeightSpec>;
  private tensors = 0;
  private bytes = 0;
  private readonly t0 = performance.now();

  constructor(
    readonly config: ModelConfig,
    private readonly backend: Backend,
    private readonly seed = 0,
  ) {
    this.specs = new Map(modelTensors(config).map((s) => [s.name, s]));
  }

  /** Dummy weights are bf16 (FP8 ones come from `--quantization fp8`). */
  fp8Scaling(): null {
    return null;
  }

  has(name: string): boolean {
    return this.specs.has(name);
  }

  fill(dst: Tensor, name: string, o: ReadOptions): void {
    const spec = this.specs.get(name);
    if (!spec) throw new Error(`--load-format dummy: the config has no tensor "${name}"`);
    if (o.expectShape && !sameShape(spec.shape, o.expectShape))
      throw new Error(
        `--load-format dummy: "${name}" is ${shapeStr(spec.shape)}, expected ${shapeStr(o.expectShape)}`,
      );
    const { std } = initOf(spec);
    const key = `${name}@${o.rows?.[0] ?? 0},${o.cols?.[0] ?? 0}`;
    const seed = mix32((fnv1a(key) ^ Math.imul(this.seed | 0, 0x9e3779b9)) >>> 0);
    this.backend.fillRandom(dst, seed, std * Math.sqrt(3));
    this.tensors++;
    this.bytes += numel(dst.shape) * DTYPE_BYTES[dst.dtype];
  }

  async load(progress?: LoadProgress): Promise<LoadStats> {
    progress?.start(this.bytes, this.tensors);
    this.backend.synchronize();
    progress?.advance(this.bytes);
    const stats = {
      tensors: this.tensors,
      bytes: this.bytes,
      seconds: (performance.now() - this.t0) / 1000,
      dummy: true,
    };
    progress?.done(stats);
    return stats;
  }
}
