/**
 * out[M, N] = x[M, K] · w[N, K]^T, float32 storage, float64 accumulation (JS numbers).
 * Both operands are read along K contiguously. The loop nest is cache-blocked: a panel of
 * w rows sized to stay in L2 is reused for every row of x, and a 4×4 register tile computes
 * 16 dot products per pass over K, so each loaded value feeds four multiply-adds.
 */
const PANEL_BYTES = 256 * 1024;

export function matmulF32(
  out: Float32Array,
  x: Float32Array,
  w: Float32Array,
  M: number,
  N: number,
  K: number,
): void {
  const panel = Math.max(4, Math.min(N, Math.floor(PANEL_BYTES / (4 * K)) & ~3));
  for (let j0 = 0; j0 < N; j0 += panel) {
    const j1 = Math.min(N, j0 + panel);
    let i = 0;
    for (; i + 4 <= M; i += 4) rows4(out, x, w, i, j0, j1, N, K);
    for (; i < M; i++) rows1(out, x, w, i, j0, j1, N, K);
  }
}

// prettier-ignore
function rows4(o: Float32Array, x: Float32Array, w: Float32Array, i: number, j0: number, j1: number, N: number, K: number): void {
  const a0 = i * K, a1 = a0 + K, a2 = a1 + K, a3 = a2 + K;
  let j = j0;
  for (; j + 4 <= j1; j += 4) {
    const b0 = j * K, b1 = b0 + K, b2 = b1 + K, b3 = b2 + K;
    let c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
    let c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
    for (let k = 0; k < K; k++) {
      const x0 = x[a0 + k]!, x1 = x[a1 + k]!, x2 = x[a2 + k]!, x3 = x[a3 + k]!;
      const w0 = w[b0 + k]!, w1 = w[b1 + k]!, w2 = w[b2 + k]!, w3 = w[b3 + k]!;
      c00 += x0 * w0; c01 += x0 * w1; c02 += x0 * w2; c03 += x0 * w3;
      c10 += x1 * w0; c11 += x1 * w1; c12 += x1 * w2; c13 += x1 * w3;
      c20 += x2 * w0; c21 += x2 * w1; c22 += x2 * w2; c23 += x2 * w3;
      c30 += x3 * w0; c31 += x3 * w1; c32 += x3 * w2; c33 += x3 * w3;
    }
    const r0 = i * N + j, r1 = r0 + N, r2 = r1 + N, r3 = r2 + N;
    o[r0] = c00; o[r0 + 1] = c01; o[r0 + 2] = c02; o[r0 + 3] = c03;
    o[r1] = c10; o[r1 + 1] = c11; o[r1 + 2] = c12; o[r1 + 3] = c13;
    o[r2] = c20; o[r2 + 1] = c21; o[r2 + 2] = c22; o[r2 + 3] = c23;
    o[r3] = c30; o[r3 + 1] = c31; o[r3 + 2] = c32; o[r3 + 3] = c33;
  }
  for (; j < j1; j++) {
    for (let r = 0; r < 4; r++) o[(i + r) * N + j] = dot(x, (i + r) * K, w, j * K, K);
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
