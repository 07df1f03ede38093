/**
 * Host <-> device copies of the CUDA backend's tensors: f32/i32 uploads as they are, f32 host
 * data into bf16 tensors converted on the GPU, reads back as f32 (bf16 widened, FP8 weights
 * dequantized exactly as the CPU loads them). Inside a graph capture uploads are staged in
 * pinned memory that lives with the graph; reads throw (the capture contract).
 */
import { shapeStr } from '../../tensor/shape.js';
import type { Tensor } from '../../tensor/tensor.js';
import { CudaFp8Weight } from './cuda-fp8-weight.js';
import { cuda, type CudaTensor } from './cuda-tensor.js';
import type { PinnedBuffer } from './device.js';
import * as ew from './elementwise-ops.js';
import { fp8Dequantize } from './fp8-ops.js';
import type { OpContext } from './op-context.js';

const CHUNK_ELEMS = 16 * 2 ** 20;

/** Row ranges of an FP8 weight flattened to [rows, K] (the backend's view and rows). */
export type Fp8Rows = (t: CudaFp8Weight, start: number, count: number) => CudaFp8Weight;

export class HostTransfer {
  private readonly capturePinned: PinnedBuffer[] = [];

  constructor(
    private readonly ctx: OpContext,
    private readonly fp8Rows: Fp8Rows,
  ) {}

  write(dst: Tensor, data: Float32Array | Int32Array): void {
    const t = cuda(dst, 'write', ['f32', 'bf16', 'i32']);
    if (data.length !== t.numel)
      throw new Error(`write: ${data.length} values for shape ${shapeStr(t.shape)}`);
    const dev = this.ctx.dev;
    if (dev.isCapturing) {
      this.uploadCaptured(t, data);
    } else if (t.dtype === 'i32' || t.dtype === 'f32') {
      if ((t.dtype === 'i32') !== data instanceof Int32Array)
        throw new Error(`write: ${data.constructor.name} cannot be stored as ${t.dtype}`);
      dev.upload(t.ptr, data);
    } else {
      if (!(data instanceof Float32Array)) throw new Error('write: bf16 needs Float32Array data');
      this.uploadAsBf16(t.ptr, data);
    }
  }

  /**
   * An upload inside a graph capture (e.g. per-step host data): staged in pinned memory that
   * stays alive with the graph, so every replay copies the same values.
   */
  private uploadCaptured(t: CudaTensor, data: Float32Array | Int32Array): void {
    if (t.dtype === 'bf16')
      throw new Error('cuda: bf16 upload during graph capture is not supported');
    const pinned = this.ctx.dev.pinned(Math.max(4, data.byteLength));
    new Uint8Array(pinned.view.buffer, 0, data.byteLength).set(
      new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    );
    this.capturePinned.push(pinned);
    this.ctx.dev.uploadAsync(t.ptr, pinned.address, data.byteLength);
  }

  /** f32 host data -> bf16 device memory, converted on the GPU in chunks. */
  private uploadAsBf16(dst: number, data: Float32Array): void {
    const chunk = Math.min(data.length, CHUNK_ELEMS);
    const staging = this.ctx.ws.get('upload.staging', chunk * 4);
    for (let i = 0; i < data.length; i += chunk) {
      const n = Math.min(chunk, data.length - i);
      this.ctx.dev.upload(staging, data.subarray(i, i + n));
      ew.convert(this.ctx, dst + i * 2, 'b', staging, 'f', n);
    }
    this.ctx.dev.sync();
  }

  readF32(t: Tensor): Float32Array {
    if (t instanceof CudaFp8Weight) return this.readFp8(t);
    const c = cuda(t, 'readF32', ['f32', 'bf16']);
    const n = c.numel;
    this.refuseReadWhileCapturing('readF32', c);
    if (c.dtype === 'f32') {
      const out = new Float32Array(n);
      this.ctx.dev.download(out, c.ptr);
      return out;
    }
    const bits = new Uint16Array(n);
    this.ctx.dev.download(bits, c.ptr);
    const out = new Float32Array(n);
    const u = new Uint32Array(out.buffer);
    for (let i = 0; i < n; i++) u[i] = bits[i]! << 16;
    return out;
  }

  /** An FP8 weight's dequantized values, code · scale, exactly (what the CPU loads). */
  private readFp8(t: CudaFp8Weight): Float32Array {
    this.refuseReadWhileCapturing('readF32', t);
    const K = t.shape[t.shape.length - 1]!;
    const rows = t.numel / K;
    const chunk = Math.max(1, Math.min(rows, Math.floor(CHUNK_ELEMS / K)));
    const staging = this.ctx.ws.get('fp8.read', chunk * K * 4);
    const out = new Float32Array(t.numel);
    for (let r = 0; r < rows; r += chunk) {
      const n = Math.min(chunk, rows - r);
      fp8Dequantize(this.ctx, staging, 'f', this.fp8Rows(t, r, n));
      this.ctx.dev.download(out.subarray(r * K, (r + n) * K), staging);
    }
    return out;
  }

  readI32(t: Tensor): Int32Array {
    const c = cuda(t, 'readI32', ['i32']);
    this.refuseReadWhileCapturing('readI32', c);
    const out = new Int32Array(c.numel);
    this.ctx.dev.download(out, c.ptr);
    return out;
  }

  /**
   * The capture contract: a captured step only enqueues device work, so a host read inside a
   * capture is a bug in the step (or in its `capturable` claim), never silently recorded.
   */
  private refuseReadWhileCapturing(op: string, t: CudaTensor): void {
    if (this.ctx.dev.isCapturing)
      throw new Error(
        `cuda: ${op} of a ${shapeStr(t.shape)} tensor during CUDA graph capture: a capturable step must not read the device on the host`,
      );
  }
}
