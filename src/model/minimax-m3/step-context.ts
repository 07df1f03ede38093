import type { Backend, BatchMeta } from '../../backend/backend.js';
import type { ModelConfig } from '../../config/model-config.js';
import type { Communicator } from '../../parallel/communicator.js';
import type { DType } from '../../tensor/dtype.js';
import type { Shape } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';

/**
 * Everything one forward step needs, passed explicitly to each block (no global context).
 * Scratch tensors are taken with `scratch` and all released when the step ends.
 */
export class StepContext {
  private readonly taken: Tensor[] = [];
  /** MoE layer index -> routed ids [T, K'] read back when the batch asks for capture. */
  readonly routedExperts: Record<string, Int32Array> = {};

  constructor(
    readonly cfg: ModelConfig,
    readonly backend: Backend,
    readonly comm: Communicator,
    readonly meta: BatchMeta,
  ) {}

  get numTokens(): number {
    return this.meta.numTokens;
  }

  scratch(shape: Shape, dtype: DType = 'bf16'): Tensor {
    const t = this.backend.alloc(shape, dtype);
    this.taken.push(t);
    return t;
  }

  /**
   * Scratch for an op's output that the op writes whole (a matmul, attention, SwiGLU, the
   * router), so it need not start at zero: uninitialized where the backend offers it.
   */
  output(shape: Shape, dtype: DType = 'bf16'): Tensor {
    const b = this.backend;
    const t = b.allocUninitialized ? b.allocUninitialized(shape, dtype) : b.alloc(shape, dtype);
    this.taken.push(t);
    return t;
  }

  /** Host data as a tensor released with the step's scratch. */
  upload(data: Float32Array | Int32Array, shape: Shape, dtype: DType): Tensor {
    const t = this.backend.upload(data, shape, dtype);
    this.taken.push(t);
    return t;
  }

  release(): void {
    for (const t of this.taken) this.backend.free(t);
    this.taken.length = 0;
  }
}
