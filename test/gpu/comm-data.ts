/**
 * Data, device tensors and bit comparisons for the IPC collective checks and bench:comm.
 * Values are generated as raw bit patterns (fast enough for 8 ranks × 8192 × 6144): `random`
 * bf16 of magnitudes 2^-8..2^8 and both signs (sums depend on their order), `integer` small
 * integers (sums exact in any order: checks data movement alone).
 */
import { CudaTensor } from '../../src/backend/cuda/cuda-tensor.js';
import type { CudaDevice } from '../../src/backend/cuda/device.js';
import type { DType } from '../../src/tensor/dtype.js';

export type DataKind = 'random' | 'integer';
export type IoDtype = Extract<DType, 'bf16' | 'f32'>;

/** Host values of one rank's tensor: f32 values (bf16-exact when dtype is bf16). */
export function hostData(n: number, seed: number, kind: DataKind, dtype: IoDtype): Float32Array {
  let s = (seed * 2654435761 + 12345) >>> 0;
  const u = new Uint32Array(n);
  if (kind === 'integer') {
    const bits = new Uint32Array(Float32Array.from({ length: 16 }, (_, k) => k - 8).buffer);
    for (let i = 0; i < n; i++) {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      u[i] = bits[s >>> 28]!; // -8..7
    }
  } else {
    // sign, exponent 119..135 (2^-8..2^8), mantissa: 7 bits (bf16) or 23 bits (f32)
    const exps = Uint32Array.from({ length: 64 }, (_, k) => (119 + (k % 17)) << 23);
    const manMask = dtype === 'bf16' ? 0x7f0000 : 0x7fffff;
    for (let i = 0; i < n; i++) {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      u[i] = ((s & 0x80000000) | exps[(s >>> 25) & 63]! | ((s << 7) & manMask)) >>> 0;
    }
  }
  return new Float32Array(u.buffer);
}

/** A device tensor of `shape` on `dev` (plain cuMemAlloc; `free` when done). */
export function deviceTensor(dev: CudaDevice, shape: number[], dtype: IoDtype): CudaTensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const bytes = n * (dtype === 'bf16' ? 2 : 4);
  return new CudaTensor(shape, dtype, dev.malloc(bytes, 'comm check tensor'), null);
}

export function freeTensor(dev: CudaDevice, t: CudaTensor): void {
  dev.free(t.ptr, t.bytes);
}

/** Uploads f32 values (bf16-exact for bf16 tensors: the top 16 bits are stored). */
export function put(dev: CudaDevice, t: CudaTensor, v: Float32Array): void {
  if (t.dtype === 'f32') return dev.upload(t.ptr, v);
  const u = new Uint32Array(v.buffer, v.byteOffset, v.length);
  const b = new Uint16Array(v.length);
  for (let i = 0; i < v.length; i++) b[i] = u[i]! >>> 16;
  dev.upload(t.ptr, b);
}

/** Downloads as f32 values (bf16 widened exactly). */
export function get(dev: CudaDevice, t: CudaTensor): Float32Array {
  const out = new Float32Array(t.numel);
  if (t.dtype === 'f32') {
    dev.download(out, t.ptr);
    return out;
  }
  const b = new Uint16Array(t.numel);
  dev.download(b, t.ptr);
  const u = new Uint32Array(out.buffer);
  for (let i = 0; i < b.length; i++) u[i] = b[i]! << 16;
  return out;
}

/** Elements whose bits differ (NaN payloads and -0 included). */
export function bitMismatches(got: Float32Array, want: Float32Array): number {
  if (got.length !== want.length) return Math.max(got.length, want.length);
  const a = new Uint32Array(got.buffer, got.byteOffset, got.length);
  const b = new Uint32Array(want.buffer, want.byteOffset, want.length);
  let n = 0;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) n++;
  return n;
}

/** The tensor's raw storage (bf16 bit patterns, or f32 bits) without conversion. */
export function getRaw(dev: CudaDevice, t: CudaTensor): Uint16Array | Uint32Array {
  const out = t.dtype === 'bf16' ? new Uint16Array(t.numel) : new Uint32Array(t.numel);
  dev.download(out, t.ptr);
  return out;
}

/** Elements of `t` on the device whose bits differ from the host values `want`. */
export function mismatchesOn(dev: CudaDevice, t: CudaTensor, want: Float32Array): number {
  const raw = getRaw(dev, t);
  const w = new Uint32Array(want.buffer, want.byteOffset, want.length);
  if (raw.length !== w.length) return Math.max(raw.length, w.length);
  let n = 0;
  if (raw instanceof Uint32Array) {
    for (let i = 0; i < w.length; i++) if (raw[i] !== w[i]) n++;
  } else {
    // A value with bits below bf16's cannot be stored, so it counts as a mismatch too.
    for (let i = 0; i < w.length; i++) if ((raw[i]! << 16) >>> 0 !== w[i]) n++;
  }
  return n;
}

/** Elements whose raw bits differ between two device tensors. */
export function rawMismatches(dev: CudaDevice, a: CudaTensor, b: CudaTensor): number {
  const x = getRaw(dev, a);
  const y = getRaw(dev, b);
  let n = Math.abs(x.length - y.length);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) n++;
  return n;
}
