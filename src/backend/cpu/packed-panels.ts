/**
 * Weights [.., N, K] in the layout of the register-blocked matmul (wasm/matmul-packed.wat):
 * each [N, K] matrix in panels of 8 columns, element (n, k) at (⌊n/8⌋·K + k)·8 + n mod 8, so
 * the 8 weights one k multiplies are contiguous (bf16: in the interleaved order of `lane`).
 * float32, or bf16 bits widened in the kernel.
 * Matrices keep their offsets (matrix e starts at e·N·K), so an expert's slice is a subarray.
 */
export class PackedPanels {
  constructor(readonly data: Float32Array | Uint16Array) {}

  /** Elements [start, end) of the packed data: whole matrices (an expert's weights). */
  subarray(start: number, end: number): PackedPanels {
    return new PackedPanels(this.data.subarray(start, end));
  }
}

/** Whether [N, K] matrices can be packed (N in whole panels; K in whole 4-lane vectors). */
export function packable(N: number, K: number): boolean {
  return N > 0 && K > 0 && N % 8 === 0 && K % 4 === 0;
}

/** src: row-major [E, N, K] (any E ≥ 1) → dst: the packed layout, same length and type. */
export function packPanels<T extends Float32Array | Uint16Array>(
  src: T,
  dst: T,
  N: number,
  K: number,
): T {
  const bf16 = src instanceof Uint16Array;
  for (let m = 0; m < src.length; m += N * K) {
    for (let n = 0; n < N; n++) {
      const row = m + n * K;
      const out = m + (n >> 3) * 8 * K + lane(n & 7, bf16);
      for (let k = 0; k < K; k++) dst[out + 8 * k] = src[row + k]!;
    }
  }
  return dst;
}

/** The row-major float32 [.., N, K] of packed weights (for the JS fallback kernel). */
export function unpackPanels(p: PackedPanels, N: number, K: number): Float32Array {
  const src = p.data;
  const out = new Float32Array(src.length);
  const bits = new Uint32Array(out.buffer);
  for (let m = 0; m < src.length; m += N * K) {
    for (let n = 0; n < N; n++) {
      const at = m + (n >> 3) * 8 * K + lane(n & 7, src instanceof Uint16Array);
      for (let k = 0; k < K; k++) {
        if (src instanceof Uint16Array) bits[m + n * K + k] = src[at + 8 * k]! << 16;
        else out[m + n * K + k] = src[at + 8 * k]!;
      }
    }
  }
  return out;
}

/**
 * Where column c (0..7) of a block sits among the block's 8 weights of one k. bf16 columns
 * interleave as c0 c4 c1 c5 c2 c6 c3 c7: read as four 32-bit lanes, a shift left by 16 gives
 * columns 0..3 as float32 and a mask of the high halves columns 4..7 (two instructions).
 */
function lane(c: number, bf16: boolean): number {
  return bf16 ? (c < 4 ? 2 * c : 2 * (c - 4) + 1) : c;
}
