/** cos and sin of position · theta^(−2i/rotaryDim) for each token t and i < rotaryDim/2: [T, half]. */
export interface RopeTable {
  readonly cos: Float64Array;
  readonly sin: Float64Array;
}

export function ropeTable(positions: Int32Array, rotaryDim: number, theta: number): RopeTable {
  const half = rotaryDim / 2;
  const invFreq = new Float64Array(half);
  for (let i = 0; i < half; i++) invFreq[i] = theta ** (-(2 * i) / rotaryDim);
  const cos = new Float64Array(positions.length * half);
  const sin = new Float64Array(positions.length * half);
  for (let t = 0; t < positions.length; t++) {
    for (let i = 0; i < half; i++) {
      cos[t * half + i] = Math.cos(positions[t]! * invFreq[i]!);
      sin[t * half + i] = Math.sin(positions[t]! * invFreq[i]!);
    }
  }
  return { cos, sin };
}

/**
 * Partial NeoX RoPE, in place, on x [T, nHeads * headDim]: for i < rotaryDim/2 the pair
 * (i, i + rotaryDim/2) of every head is rotated by position · theta^(−2i/rotaryDim);
 * dims ≥ rotaryDim are left alone. `table` is ropeTable of the T positions (a step computes
 * it once for all its q, k and index projections).
 */
export function ropeNeox(
  x: Float32Array,
  table: RopeTable,
  nHeads: number,
  headDim: number,
  rotaryDim: number,
): void {
  const half = rotaryDim / 2;
  const { cos, sin } = table;
  const T = cos.length / half;
  for (let t = 0; t < T; t++) {
    const c0 = t * half;
    for (let h = 0; h < nHeads; h++) {
      const base = (t * nHeads + h) * headDim;
      for (let i = 0; i < half; i++) {
        const a = x[base + i]!;
        const b = x[base + i + half]!;
        x[base + i] = a * cos[c0 + i]! - b * sin[c0 + i]!;
        x[base + i + half] = b * cos[c0 + i]! + a * sin[c0 + i]!;
      }
    }
  }
}
