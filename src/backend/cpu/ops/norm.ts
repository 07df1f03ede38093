/** Gemma RMSNorm over rows of w.length: y = x / sqrt(mean(x²) + eps) · (1 + w). */
export function rmsNormRows(
  out: Float32Array,
  x: Float32Array,
  w: Float32Array,
  eps: number,
): void {
  const n = w.length;
  for (let r = 0; r < x.length; r += n) {
    let ss = 0;
    for (let i = 0; i < n; i++) ss += x[r + i]! * x[r + i]!;
    const inv = 1 / Math.sqrt(ss / n + eps);
    for (let i = 0; i < n; i++) out[r + i] = x[r + i]! * inv * (1 + w[i]!);
  }
}

/** residual += x, then out = rmsNorm(residual). */
export function addRmsNormRows(
  out: Float32Array,
  residual: Float32Array,
  x: Float32Array,
  w: Float32Array,
  eps: number,
): void {
  for (let i = 0; i < residual.length; i++) residual[i] = residual[i]! + x[i]!;
  rmsNormRows(out, residual, w, eps);
}
