import type { Fp8WeightOps } from '../backend.js';
import type { DType } from '../../tensor/dtype.js';
import { fp8ScaleShape, type Fp8Scaling, type Fp8Weight } from '../../tensor/fp8-weight.js';
import { numel, shapeStr, type Shape } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import { CudaFp8Weight } from './cuda-fp8-weight.js';
import { cuda, type CudaTensor } from './cuda-tensor.js';
import { fp8Quantize } from './fp8-ops.js';
import type { OpContext } from './op-context.js';

/** Backend.fp8 of the CUDA backend: FP8 weights as E4M3 codes plus per-row group scales. */
export class CudaFp8WeightOps implements Fp8WeightOps {
  constructor(
    private readonly ctx: OpContext,
    private readonly allocRaw: (shape: Shape, dtype: DType) => CudaTensor,
  ) {}

  alloc(shape: Shape, scaling: Fp8Scaling): Fp8Weight {
    if (shape.length < 2) throw new Error(`fp8: a weight needs rank >= 2, not ${shapeStr(shape)}`);
    const codes = this.allocRaw(shape, 'f8e4m3');
    const scales = this.allocRaw(
      fp8ScaleShape(shape, scaling),
      scaling.kind === 'block' ? 'f32' : 'u8',
    );
    this.ctx.dev.memsetAsync(codes.ptr, 0, codes.bytes);
    this.ctx.dev.memsetAsync(scales.ptr, 0, scales.bytes);
    return new CudaFp8Weight(shape, codes.ptr, codes.block, scales, scaling);
  }

  write(dst: Fp8Weight, codes: Uint8Array, scales: Float32Array | Uint8Array): void {
    const w = fp8(dst, 'fp8.write');
    const wantScale = w.scaling.kind === 'block' ? Float32Array : Uint8Array;
    if (
      codes.length !== w.numel ||
      scales.length !== w.scales.numel ||
      !(scales instanceof wantScale)
    )
      throw new Error(
        `fp8.write: ${codes.length} codes and ${scales.length} ${scales.constructor.name} scales for an FP8 weight ${shapeStr(w.shape)} with scales ${shapeStr(w.scales.shape)} ${w.scales.dtype}`,
      );
    this.ctx.dev.upload(w.ptr, codes);
    this.ctx.dev.upload(w.scales.ptr, scales);
  }

  quantize(src: Tensor): Fp8Weight {
    const s = cuda(src, 'fp8.quantize', ['bf16']);
    if (s.shape.length < 2) throw new Error(`fp8.quantize: ${shapeStr(s.shape)} is not a matrix`);
    const [N, K] = s.shape.slice(-2) as [number, number];
    const matrices = numel(s.shape.slice(0, -2));
    const w = this.alloc(s.shape, { kind: 'block', group: 128 }) as CudaFp8Weight;
    fp8Quantize(this.ctx, w.ptr, w.scales.ptr, s.ptr, matrices, N, K);
    return w;
  }
}

/** Casts to a CUDA FP8 weight. */
export function fp8(t: Tensor, what: string): CudaFp8Weight {
  if (!(t instanceof CudaFp8Weight)) throw new Error(`${what}: not a CUDA FP8 weight (${t.dtype})`);
  return t;
}
