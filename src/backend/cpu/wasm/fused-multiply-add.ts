import { setFlagsFromString } from 'node:v8';
import { FMA_PROBE_WASM_BASE64 } from './kernels-wasm.js';
import { wasm } from './wasm-api.js';

let available: boolean | undefined; // a fact of this process (runtime and CPU): probed once

/**
 * Whether this process can run the fused multiply-add matmul kernels: the runtime takes
 * relaxed SIMD and its f32x4.relaxed_madd fuses (x64 with FMA3: one rounding per step, as
 * fma-probe.wat checks). Node 20's V8 (11.3) has relaxed SIMD behind
 * --experimental-wasm-relaxed-simd (shipped from V8 11.4, Node 22): when the probe does not
 * validate, that flag is set (it applies to modules compiled afterwards, in every thread of
 * the process) and the probe tried again. Where relaxed_madd does not fuse it gives the plain
 * kernels' results, so they are used instead.
 */
export function fusedMultiplyAdd(): boolean {
  if (available !== undefined) return available;
  const bytes = Buffer.from(FMA_PROBE_WASM_BASE64, 'base64');
  if (!wasm.validate(bytes)) setFlagsFromString('--experimental-wasm-relaxed-simd');
  if (!wasm.validate(bytes)) return (available = false);
  const probe = new wasm.Instance(new wasm.Module(bytes), {}).exports['probe'] as (
    a: number,
    b: number,
    c: number,
  ) => number;
  const a = 1 + 2 ** -12;
  available = probe(a, a, -(1 + 2 ** -11)) === 2 ** -24;
  return available;
}
