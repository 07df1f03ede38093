/**
 * Partial NeoX RoPE, in place, on x [T, nHeads * headDim]: for i < rotaryDim/2 the pair
 * (i, i + rotaryDim/2) of every head is rotated by position · theta^(−2i/rotaryDim);
 * dims ≥ rotaryDim are left alone.
 */
export function ropeNeox(
  x: Float32Array,
  positions: Int32Array,
  nHeads: number,
  headDim: number,
  rotaryDim: number,
  theta: number,
): void {
  const half = rotaryDim / 2;
  const invFreq = new Float64Array(half);
  for (let i = 0; i < half; i++) invFreq[i] = theta ** (-(2 * i) / rotaryDim);
  const cos = new Float64Array(half);
  const sin = new Float64Array(half);
  for (let t = 0; t < positions.length; t++) {
    const p = positions[t]!;
    for (let i = 0; i < half; i++) {
      cos[i] = Math.cos(p * invFreq[i]!);
      sin[i] = Math.sin(p * invFreq[i]!);
    }
    for (let h = 0; h < nHeads; h++) {
      const base = (t * nHeads + h) * headDim;
      for (let i = 0; i < half; i++) {
        const a = x[base + i]!;
        const b = x[base + i + half]!;
        x[base + i] = a * cos[i]! - b * sin[i]!;
        x[base + i + half] = b * cos[i]! + a * sin[i]!;
      }
    }
  }
}
