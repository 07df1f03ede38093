import { matmulF32, panelRows } from '../ops/matmul.js';
import { MATMUL_WASM_BASE64 } from './kernels-wasm.js';
import { wasm } from './wasm-api.js';
import { WasmHeap } from './wasm-heap.js';

type WasmMatmul = (
  o: number,
  x: number,
  w: number,
  M: number,
  N: number,
  K: number,
  P: number,
) => void;

let compiled: object | null = null;

/**
 * The CPU backend's memory and hot kernels. matmul runs the WASM SIMD kernel (matmul.wat)
 * when all operands live in the heap and K is a multiple of 4, else the JS kernel.
 */
export class CpuKernels {
  readonly heap = new WasmHeap();
  private readonly wasmMatmul: WasmMatmul;

  constructor() {
    compiled ??= new wasm.Module(Buffer.from(MATMUL_WASM_BASE64, 'base64'));
    const instance = new wasm.Instance(compiled, { env: { memory: this.heap.memory } });
    this.wasmMatmul = instance.exports['matmul'] as WasmMatmul;
  }

  /** out[M, N] = x[M, K] · w[N, K]^T. */
  matmul(
    out: Float32Array,
    x: Float32Array,
    w: Float32Array,
    M: number,
    N: number,
    K: number,
  ): void {
    const h = this.heap;
    if (K % 4 === 0 && h.owns(out) && h.owns(x) && h.owns(w)) {
      this.wasmMatmul(out.byteOffset, x.byteOffset, w.byteOffset, M, N, K, panelRows(K));
    } else {
      matmulF32(out, x, w, M, N, K);
    }
  }
}
