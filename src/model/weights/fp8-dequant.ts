/** E8M0 exponent byte -> multiplier 2^(s-127); 255 is NaN (OCP MX spec). */
export const E8M0_TABLE: Float32Array = (() => {
  const t = new Float32Array(256);
  for (let s = 0; s < 255; s++) t[s] = 2 ** (s - 127);
  t[255] = NaN;
  return t;
})();

export function e8m0ToF32(codes: Uint8Array): Float32Array {
  const out = new Float32Array(codes.length);
  for (let i = 0; i < codes.length; i++) out[i] = E8M0_TABLE[codes[i]!]!;
  return out;
}

/** The part of a scale grid that covers a slice of the weight. */
export interface ScaleWindow {
  /** Scales as multipliers, row-major [rows, cols] of the window. */
  readonly values: Float32Array;
  readonly cols: number;
  /** Grid row / col of the window's first element. */
  readonly row0: number;
  readonly col0: number;
}

/** Grid range [start, count) of blocks of `block` that the element range [start, count) touches. */
export function blockRange(range: readonly [number, number], block: number): [number, number] {
  const [s, n] = range;
  if (n === 0) return [Math.floor(s / block), 0];
  const first = Math.floor(s / block);
  return [first, Math.floor((s + n - 1) / block) - first + 1];
}

/**
 * In place: w[i, j] *= scale[(r0 + i) / bo, (c0 + j) / bi] for the [rn, cn] slice `w` that
 * starts at (r0, c0) of the full weight.
 */
export function applyBlockScales(
  w: Float32Array,
  slice: { r0: number; rn: number; c0: number; cn: number },
  block: readonly [number, number],
  sc: ScaleWindow,
): void {
  const [bo, bi] = block;
  const { r0, rn, c0, cn } = slice;
  for (let i = 0; i < rn; i++) {
    const srow = (Math.floor((r0 + i) / bo) - sc.row0) * sc.cols;
    const base = i * cn;
    // Walk column blocks so the scale lookup happens once per run of `bi` elements.
    let j = 0;
    while (j < cn) {
      const gc = Math.floor((c0 + j) / bi);
      const end = Math.min(cn, (gc + 1) * bi - c0);
      const s = sc.values[srow + gc - sc.col0]!;
      for (; j < end; j++) w[base + j]! *= s;
    }
  }
}
