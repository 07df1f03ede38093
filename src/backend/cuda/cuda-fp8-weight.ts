import type { Fp8Scaling, Fp8Weight } from '../../tensor/fp8-weight.js';
import type { Shape } from '../../tensor/shape.js';
import { CudaTensor, type PoolBlock } from './cuda-tensor.js';

/** An FP8 weight in device memory: E4M3 codes at `ptr`, per-row group scales in `scales`. */
export class CudaFp8Weight extends CudaTensor implements Fp8Weight {
  declare readonly dtype: 'f8e4m3';

  constructor(
    shape: Shape,
    ptr: number,
    block: PoolBlock | null,
    readonly scales: CudaTensor,
    readonly scaling: Fp8Scaling,
  ) {
    super(shape, 'f8e4m3', ptr, block);
  }

  /** Kernel-name flavour of the scaling. */
  get flavour(): 'blk' | 'mx' {
    return this.scaling.kind === 'block' ? 'blk' : 'mx';
  }
}
