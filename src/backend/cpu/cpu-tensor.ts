import type { DType } from '../../tensor/dtype.js';
import { numel, shapeStr, type Shape } from '../../tensor/shape.js';
import type { Tensor, TensorStorage } from '../../tensor/tensor.js';

/**
 * A CPU tensor: float dtypes are stored as float32, i32 as int32 (Uint16Array bf16 bits only
 * for kernel operands, see KernelWeights). `data` may be a view of `base`'s block.
 */
export class CpuTensor implements Tensor {
  readonly device = 'cpu' as const;
  constructor(
    readonly shape: Shape,
    readonly dtype: DType,
    readonly data: Float32Array | Int32Array | Uint16Array,
    /** True when this tensor owns its block (alloc/upload), false for views. */
    readonly owner = false,
    /** The tensor owning the block this view lies in (null for owners). */
    readonly base: CpuTensor | null = null,
  ) {
    if (data.length !== numel(shape)) {
      throw new Error(`CpuTensor: ${data.length} elements do not fill shape ${shapeStr(shape)}`);
    }
  }

  get storage(): TensorStorage {
    return this;
  }
}

export function f32(t: Tensor, what: string, shape?: Shape): Float32Array {
  const c = cpu(t, what, shape);
  if (!(c.data instanceof Float32Array))
    throw new Error(
      `${what}: expected a float32 tensor, got ${t.dtype}${c.data instanceof Uint16Array ? ' weights stored as bf16' : ''}`,
    );
  return c.data;
}

/** A weight operand: float32, or bf16 bits kept half-width. */
export function weight(t: Tensor, what: string, shape?: Shape): Float32Array | Uint16Array {
  const c = cpu(t, what, shape);
  if (c.data instanceof Int32Array) throw new Error(`${what}: expected a float tensor, got i32`);
  return c.data;
}

/** bf16 bits → float32 (exact). */
export function widenBf16(
  src: Uint16Array,
  dst: Float32Array = new Float32Array(src.length),
): Float32Array {
  const bits = new Uint32Array(dst.buffer, dst.byteOffset, dst.length);
  for (let i = 0; i < src.length; i++) bits[i] = src[i]! << 16;
  return dst;
}

/** The bf16 bits of `a` when every value is exactly a bf16 (low 16 bits zero), else null. */
export function exactBf16(a: Float32Array): Uint16Array | null {
  const bits = new Uint32Array(a.buffer, a.byteOffset, a.length);
  for (let i = 0; i < bits.length; i++) if ((bits[i]! & 0xffff) !== 0) return null;
  const out = new Uint16Array(a.length);
  for (let i = 0; i < bits.length; i++) out[i] = bits[i]! >>> 16;
  return out;
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
