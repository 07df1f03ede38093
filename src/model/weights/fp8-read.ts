import { sameShape, shapeStr } from '../../tensor/shape.js';
import type { Fp8Scaling } from '../../tensor/fp8-weight.js';
import type { Slot } from './checkpoint-slots.js';
import { blockRange } from './fp8-dequant.js';
import { decodeToF32 } from './safetensors-dtype.js';
import { SafetensorsError } from './safetensors-file.js';
import { SCALE_SUFFIX } from './weight-table.js';

/** E4M3 codes [rows, cols] of a weight slice and its per-row scales [rows, ceil(cols/group)]. */
export interface Fp8Rows {
  readonly codes: Uint8Array;
  /** f32 scale_inv (block FP8) or E8M0 exponent bytes (MXFP8), one per row and group. */
  readonly scales: Float32Array | Uint8Array;
  readonly scaling: Fp8Scaling;
}

interface Fp8Request {
  readonly slot: Slot;
  /** The canonical tensor's [rows, cols] (the table's shape for a part of a fused tensor). */
  readonly shape: readonly [number, number];
  /** [bo, bi] of one stored scale. */
  readonly block: readonly [number, number];
  readonly label: string;
  readonly rows?: [number, number];
  readonly cols?: [number, number];
}

/**
 * Reads a slice of an F8_E4M3 weight as stored (codes and scales, nothing dequantized), its
 * scale grid repeated onto each row: the layout FP8 weights keep on the GPU. Columns may be
 * cut only on scale-group boundaries (vLLM refuses such tensor-parallel splits too).
 */
export function readFp8Rows(q: Fp8Request): Fp8Rows {
  const { slot, label, block } = q;
  const { weight, scale } = slot;
  const path = weight.file.path;
  if (!scale)
    throw new SafetensorsError(
      `${path}: F8_E4M3 tensor ${label} has no ${weight.raw}${SCALE_SUFFIX} companion`,
    );
  const se = scale.file.entry(scale.raw);
  const [R, C] = q.shape;
  const [r0, rn] = q.rows ?? [0, R];
  const [c0, cn] = q.cols ?? [0, C];
  const [bo, bi] = block;
  if (c0 % bi !== 0 || (cn % bi !== 0 && c0 + cn !== C))
    throw new SafetensorsError(
      `${path}: columns [${c0}, ${c0 + cn}) of FP8 tensor ${label} cut its ${bi}-wide scale groups; use a tensor-parallel size that splits on group boundaries`,
    );
  const at = slot.at;
  const pr0 = (at?.rowOffset ?? 0) + r0; // first row in the stored (possibly fused) matrix
  const sRows = blockRange([pr0, rn], bo);
  const sCols = blockRange([c0, cn], bi);
  let codes: Uint8Array;
  let grid: Uint8Array;
  let gridCols: number;
  if (at?.index !== undefined) {
    // Stacked [N, R', C]: matrix `index`, its rows; columns cut here.
    const [N, Rs, Cs] = weight.file.entry(weight.raw).shape as [number, number, number];
    checkGrid(se.shape, [N, Math.ceil(Rs / bo), Math.ceil(Cs / bi)], se.name, label, block, path);
    const all = weight.file.readBytes(weight.raw, { rows: [at.index, 1], cols: [pr0, rn] }).bytes;
    codes = cutColumns(all, rn, Cs, c0, cn);
    grid = scale.file.readBytes(se.name, { rows: [at.index, 1], cols: sRows }).bytes;
    gridCols = Math.ceil(Cs / bi);
  } else {
    const [Rs, Cs] = weight.file.entry(weight.raw).shape as [number, number];
    checkGrid(se.shape, [Math.ceil(Rs / bo), Math.ceil(Cs / bi)], se.name, label, block, path);
    codes = weight.file.readBytes(weight.raw, { rows: [pr0, rn], cols: [c0, cn] }).bytes;
    grid = scale.file.readBytes(se.name, { rows: sRows, cols: sCols }).bytes;
    gridCols = sCols[1];
  }
  const mx = se.dtype === 'U8';
  const values = mx ? grid : decodeToF32(se.dtype, grid);
  const colBase = at?.index !== undefined ? sCols[0] : 0;
  const g = sCols[1];
  const scales = mx ? new Uint8Array(rn * g) : new Float32Array(rn * g);
  for (let i = 0; i < rn; i++) {
    const src = (Math.floor((pr0 + i) / bo) - sRows[0]) * gridCols + colBase;
    for (let j = 0; j < g; j++) scales[i * g + j] = values[src + j]!;
  }
  const scaling: Fp8Scaling = mx ? { kind: 'mx', group: bi } : { kind: 'block', group: bi };
  return { codes, scales, scaling };
}

function checkGrid(
  have: readonly number[],
  want: number[],
  scaleName: string,
  label: string,
  block: readonly [number, number],
  path: string,
): void {
  if (!sameShape(have, want))
    throw new SafetensorsError(
      `${path}: scale tensor "${scaleName}" of ${label} has shape ${shapeStr(have)}, expected ${shapeStr(want)} for block ${shapeStr(block)}`,
    );
}

function cutColumns(all: Uint8Array, rows: number, C: number, c0: number, cn: number): Uint8Array {
  if (c0 === 0 && cn === C) return all;
  const out = new Uint8Array(rows * cn);
  for (let i = 0; i < rows; i++) out.set(all.subarray(i * C + c0, i * C + c0 + cn), i * cn);
  return out;
}
