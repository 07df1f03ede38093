import type { DType } from '../../tensor/dtype.js';
import { numel, shapeStr, type Shape } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';

/** A CPU tensor: float dtypes are stored as float32, i32 as int32. `data` may be a view. */
export class CpuTensor implements Tensor {
  readonly device = 'cpu' as const;
  constructor(
    readonly shape: Shape,
    readonly dtype: DType,
    readonly data: Float32Array | Int32Array,
    /** True when this tensor owns its block (alloc/upload), false for views. */
    readonly owner = false,
  ) {
    if (data.length !== numel(shape)) {
      throw new Error(`CpuTensor: ${data.length} elements do not fill shape ${shapeStr(shape)}`);
    }
  }
}

export function f32(t: Tensor, what: string, shape?: Shape): Float32Array {
  const c = cpu(t, what, shape);
  if (!(c.data instanceof Float32Array))
    throw new Error(`${what}: expected a float tensor, got ${t.dtype}`);
  return c.data;
}

export function i32(t: Tensor, what: string, shape?: Shape): Int32Array {
  const c = cpu(t, what, shape);
  if (!(c.data instanceof Int32Array))
    throw new Error(`${what}: expected an i32 tensor, got ${t.dtype}`);
  return c.data;
}

function cpu(t: Tensor, what: string, shape?: Shape): CpuTensor {
  if (!(t instanceof CpuTensor)) throw new Error(`${what}: not a CPU tensor (device ${t.device})`);
  if (shape && (shape.length !== t.shape.length || shape.some((d, i) => d !== t.shape[i]))) {
    throw new Error(`${what}: expected shape ${shapeStr(shape)}, got ${shapeStr(t.shape)}`);
  }
  return t;
}
