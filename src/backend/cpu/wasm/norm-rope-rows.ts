/** The operands of `CpuKernels.normRopeCache` (see Backend.normRopeCache). */
export interface NormRopeRows {
  readonly q: Float32Array;
  readonly k: Float32Array;
  readonly v: Float32Array | null;
  readonly qNorm: Float32Array;
  readonly kNorm: Float32Array;
  readonly kCache: Float32Array;
  readonly vCache: Float32Array | null;
  readonly numQHeads: number;
  readonly numKHeads: number;
  readonly headDim: number;
  readonly rotaryDim: number;
  readonly eps: number;
}
