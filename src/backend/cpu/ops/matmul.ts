/**
 * out[M, N] = x[M, K] · w[N, K]^T, float32 storage, float64 accumulation (JS numbers).
 * Both operands are read along K contiguously. The loop nest is cache-blocked: a panel of
 * w rows sized to stay in L2 is reused for every row of x, and a 2×4 register tile computes
 * 8 dot products per pass over K (measured faster than 4×4, which spills registers in V8).
 */
const PANEL_BYTES = 256 * 1024;

/** Rows of w per cache panel: a multiple of 4 whose K-long rows fill about PANEL_BYTES. */
export function panelRows(K: number): number {
  return Math.max(4, Math.floor(PANEL_BYTES / (4 * K)) & ~3);
}

export function matmulF32(
  out: Float32Array,
  x: Float32Array,
  w: Float32Array,
  M: number,
  N: number,
  K: number,
): void {
  const panel = Math.min(N, panelRows(K));
  for (let j0 = 0; j0 < N; j0 += panel) {
    const j1 = Math.min(N, j0 + panel);
    let i = 0;
    for (; i + 2 <= M; i += 2) rows2(out, x, w, i, j0, j1, N, K);
    for (; i < M; i++) rows1(out, x, w, i, j0, j1, N, K);
  }
}

// prettier-ignore
function rows2(o: Float32Array, x: Float32Array, w: Float32Array, i: number, j0: number, j1: number, N: number, K: number): void {
  const a0 = i * K, a1 = a0 + K;
  let j = j0;
  for (; j + 4 <= j1; j += 4) {
    const b0 = j * K, b1 = b0 + K, b2 = b1 + K, b3 = b2 + K;
    let c0 = 0, c1 = 0, c2 = 0, c3 = 0, d0 = 0, d1 = 0, d2 = 0, d3 = 0;
    for (let k = 0; k < K; k++) {
      const x0 = x[a0 + k]!, x1 = x[a1 + k]!;
      const w0 = w[b0 + k]!, w1 = w[b1 + k]!, w2 = w[b2 + k]!, w3 = w[b3 + k]!;
      c0 += x0 * w0; c1 += x0 * w1; c2 += x0 * w2; c3 += x0 * w3;
      d0 += x1 * w0; d1 += x1 * w1; d2 += x1 * w2; d3 += x1 * w3;
    }
    const r = i * N + j;
    o[r] = c0; o[r + 1] = c1; o[r + 2] = c2; o[r + 3] = c3;
    o[r + N] = d0; o[r + N + 1] = d1; o[r + N + 2] = d2; o[r + N + 3] = d3;
  }
  for (; j < j1; j++) {
    o[i * N + j] = dot(x, a0, w, j * K, K);
    o[(i + 1) * N + j] = dot(x, a1, w, j * K, K);
  }
}

// prettier-ignore
function rows1(o: Float32Array, x: Float32Array, w: Float32Array, i: number, j0: number, j1: number, N: number, K: number): void {
  const a = i * K;
  let j = j0;
  for (; j + 4 <= j1; j += 4) {
    const b0 = j * K, b1 = b0 + K, b2 = b1 + K, b3 = b2 + K;
    let c0 = 0, c1 = 0, c2 = 0, c3 = 0;
    for (let k = 0; k < K; k++) {
      const xv = x[a + k]!;
      c0 += xv * w[b0 + k]!; c1 += xv * w[b1 + k]!; c2 += xv * w[b2 + k]!; c3 += xv * w[b3 + k]!;
    }
    const r = i * N + j;
    o[r] = c0; o[r + 1] = c1; o[r + 2] = c2; o[r + 3] = c3;
  }
  for (; j < j1; j++) o[i * N + j] = dot(x, a, w, j * K, K);
}

export function dot(a: Float32Array, ao: number, b: Float32Array, bo: number, n: number): number {
  let s0 = 0,
    s1 = 0;
  let k = 0;
  for (; k + 2 <= n; k += 2) {
    s0 += a[ao + k]! * b[bo + k]!;
    s1 += a[ao + k + 1]! * b[bo + k + 1]!;
  }
  if (k < n) s0 += a[ao + k]! * b[bo + k]!;
  return s0 + s1;
}
