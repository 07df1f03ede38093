import type { DType } from './dtype.js';
import type { Shape } from './shape.js';

/**
 * A handle to memory owned by one backend. The model never reads elements through it;
 * it passes handles to backend ops. `view` reinterprets the same storage with another
 * shape (same element count) or a row range of the outermost dimension.
 */
export interface Tensor {
  readonly shape: Shape;
  readonly dtype: DType;
  readonly device: 'cpu' | 'cuda';
  /** The typed device handle: what a communicator hands to its transport. */
  readonly storage: TensorStorage;
}

/** A tensor's storage by where it lives: host elements, or a CUDA device pointer. */
export type TensorStorage =
  | { readonly device: 'cpu'; readonly data: Float32Array | Int32Array | Uint16Array }
  | { readonly device: 'cuda'; readonly ptr: number };

/** Host-side tensor data, as the checkpoint loader produces it (always float32 or int32). */
export interface HostTensor {
  readonly shape: Shape;
  readonly data: Float32Array;
}
