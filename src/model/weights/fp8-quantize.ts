import { f32ToE4m3, F8E4M3_TABLE } from '../../tensor/dtype.js';

export { f32ToE4m3 };

const E4M3_MAX = 448;

export type Fp8Format = 'fp8' | 'mxfp8';

/** Quantized rows: e4m3 codes [rows, cols] and the scale grid of those rows. */
export interface QuantizedRows {
  readonly codes: Uint8Array;
  /** F32 [ceil(rows/bo), ceil(cols/bi)] for block FP8; U8 E8M0 [rows, ceil(cols/bi)] for MXFP8. */
  readonly scales: Float32Array | Uint8Array;
}

/**
 * Quantizes a [rows, cols] chunk whose first row starts a row block. Block FP8 stores
 * scale_inv = amax/448 per [bo, bi] block; MXFP8 stores the smallest power of two
 * 2^(s−127) ≥ amax/448 per row and `bi` columns.
 */
export function quantizeRows(
  w: Float32Array,
  rows: number,
  cols: number,
  format: Fp8Format,
  block: readonly [number, number],
): QuantizedRows {
  const [bo, bi] = format === 'mxfp8' ? [1, block[1]] : block;
  const gr = Math.ceil(rows / bo);
  const gc = Math.ceil(cols / bi);
  const codes = new Uint8Array(rows * cols);
  const scales = format === 'mxfp8' ? new Uint8Array(gr * gc) : new Float32Array(gr * gc);
  for (let br = 0; br < gr; br++) {
    const r1 = Math.min(rows, (br + 1) * bo);
    for (let bc = 0; bc < gc; bc++) {
      const c1 = Math.min(cols, (bc + 1) * bi);
      let amax = 0;
      for (let r = br * bo; r < r1; r++)
        for (let c = bc * bi; c < c1; c++) amax = Math.max(amax, Math.abs(w[r * cols + c]!));
      const scale = blockScale(amax, format, scales, br * gc + bc);
      for (let r = br * bo; r < r1; r++)
        for (let c = bc * bi; c < c1; c++)
          codes[r * cols + c] = f32ToE4m3(w[r * cols + c]! / scale);
    }
  }
  return { codes, scales };
}

/** Stores the block's scale at `idx` and returns the multiplier it stands for. */
function blockScale(
  amax: number,
  format: Fp8Format,
  scales: Float32Array | Uint8Array,
  idx: number,
): number {
  if (format === 'fp8') {
    scales[idx] = amax > 0 ? amax / E4M3_MAX : 1;
    return scales[idx]!;
  }
  const s =
    amax > 0 ? Math.min(254, Math.max(0, Math.ceil(Math.log2(amax / E4M3_MAX)) + 127)) : 127;
  scales[idx] = s;
  return 2 ** (s - 127);
}

/**
 * What a block-FP8 weight means, in float32: each [rows, cols] matrix of `w` (consecutive
 * matrices for a stacked [E, rows, cols] tensor) quantized with `block` blocks
 * (quantizeRows) and dequantized, code · scale. The CPU backend's `--quantization fp8`
 * (it computes on these values); the GPU keeps the codes and scales and computes the same.
 */
export function quantizeDequantize(
  w: Float32Array,
  rows: number,
  cols: number,
  block: readonly [number, number] = [128, 128],
): Float32Array {
  const out = new Float32Array(w.length);
  const [bo, bi] = block;
  const gc = Math.ceil(cols / bi);
  for (let m = 0; m < w.length; m += rows * cols) {
    const q = quantizeRows(w.subarray(m, m + rows * cols), rows, cols, 'fp8', block);
    for (let r = 0; r < rows; r++)
      for (let c = 0; c < cols; c++) {
        const s = q.scales[Math.floor(r / bo) * gc + Math.floor(c / bi)]!;
        out[m + r * cols + c] = F8E4M3_TABLE[q.codes[r * cols + c]!]! * s;
      }
  }
  return out;
}
