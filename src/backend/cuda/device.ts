/**
 * One CUDA device as the backend uses it: the primary context, one stream, device memory,
 * pinned host memory, kernel launches (arguments packed into one native block, no per-launch
 * JS allocation), events and CUDA-graph capture. Every call is checked (check.ts).
 */
import { Checker } from './check.js';
import { native, type CudaLibs } from './ffi.js';

/** Kernel argument kinds: p = device pointer (u64), i = int32, u = uint32, f = float32, d = float64, l = int64. */
export type ArgSig = string;

export interface KernelFn {
  readonly name: string;
  readonly handle: unknown;
}

const MAX_ARGS = 48;
const CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
const CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
/** Relaxed capture: other threads' unsafe calls are not our concern (single-threaded JS). */
const CU_STREAM_CAPTURE_MODE_RELAXED = 2;
const CUDA_ERROR_NOT_READY = 600;

export class PinnedBuffer {
  constructor(
    readonly handle: unknown,
    readonly address: number,
    readonly bytes: number,
    readonly view: DataView,
  ) {}
}

export class CudaDevice {
  readonly check: Checker;
  readonly stream: unknown;
  readonly name: string;
  readonly smCount: number;
  readonly arch: string;
  private readonly argBlock: unknown;
  private readonly argView: DataView;
  private readonly paramArray: number;
  private capturing = false;
  bytesAllocated = 0;

  constructor(
    readonly libs: CudaLibs,
    readonly ordinal = 0,
  ) {
    this.check = new Checker(libs);
    const { cu } = libs;
    this.check.cu(cu.cuInit(0), 'cuInit');
    const dev = [0];
    this.check.cu(cu.cuDeviceGet(dev, ordinal), `cuDeviceGet(${ordinal})`);
    const ctx: [unknown] = [null];
    this.check.cu(cu.cuDevicePrimaryCtxRetain(ctx, dev[0]), 'cuDevicePrimaryCtxRetain');
    this.check.cu(cu.cuCtxSetCurrent(ctx[0]), 'cuCtxSetCurrent');
    const nameBuf = Buffer.alloc(256);
    this.check.cu(cu.cuDeviceGetName(nameBuf, 256, dev[0]), 'cuDeviceGetName');
    this.name = nameBuf.toString('latin1').replace(/\0.*$/s, '');
    const attr = (a: number): number => {
      const v = [0];
      this.check.cu(cu.cuDeviceGetAttribute(v, a, dev[0]), `cuDeviceGetAttribute(${a})`);
      return v[0]!;
    };
    this.smCount = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    this.arch = `sm_${attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)}${attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)}`;
    const s: [unknown] = [null];
    this.check.cu(cu.cuStreamCreate(s, 0), 'cuStreamCreate');
    this.stream = s[0];
    // Kernel parameters: slot i of 8 bytes at argBlock + 8i; paramArray[i] points at slot i.
    this.argBlock = native.alloc(MAX_ARGS * 8);
    this.argView = new DataView(native.view(this.argBlock, MAX_ARGS * 8));
    const params = native.alloc(MAX_ARGS * 8);
    const pv = new DataView(native.view(params, MAX_ARGS * 8));
    const base = native.address(this.argBlock);
    for (let i = 0; i < MAX_ARGS; i++) pv.setBigUint64(i * 8, BigInt(base + i * 8), true);
    this.paramArray = native.address(params);
    this.keep = params;
    this.launchConfig = overlapConfig(native.address(this.stream));
  }
  private readonly keep: unknown;
  /** A CUlaunchConfig for overlapped launches (its grid, block and smem set per launch). */
  private readonly launchConfig: { block: unknown; view: DataView; address: number };

  get isCapturing(): boolean {
    return this.capturing;
  }

  memInfo(): { free: number; total: number } {
    const f = [0];
    const t = [0];
    this.check.cu(this.libs.cu.cuMemGetInfo(f, t), 'cuMemGetInfo');
    return { free: Number(f[0]), total: Number(t[0]) };
  }

  malloc(bytes: number, what = 'buffer'): number {
    if (this.capturing) throw new Error(`cuda: allocation of ${what} during graph capture`);
    const p = [0];
    const n = Math.max(256, Math.ceil(bytes / 256) * 256);
    const res = this.libs.cu.cuMemAlloc(p, n) as number;
    if (res !== 0) {
      const { free, total } = this.memInfo();
      this.check.cu(
        res,
        `cuMemAlloc(${what}, ${fmtBytes(n)}; ${fmtBytes(free)} free of ${fmtBytes(total)})`,
      );
    }
    this.bytesAllocated += n;
    return Number(p[0]);
  }

  free(ptr: number, bytes = 0): void {
    if (ptr === 0) return;
    this.check.cu(this.libs.cu.cuMemFree(ptr), 'cuMemFree');
    this.bytesAllocated -= Math.max(256, Math.ceil(bytes / 256) * 256);
  }

  pinned(bytes: number): PinnedBuffer {
    const h: [unknown] = [null];
    this.check.cu(this.libs.cu.cuMemAllocHost(h, bytes), `cuMemAllocHost(${fmtBytes(bytes)})`);
    return new PinnedBuffer(
      h[0],
      native.address(h[0]),
      bytes,
      new DataView(native.view(h[0], bytes)),
    );
  }

  freePinned(p: PinnedBuffer): void {
    this.check.cu(this.libs.cu.cuMemFreeHost(p.handle), 'cuMemFreeHost');
  }

  /** Synchronous upload from JS memory (waits for the stream first). */
  upload(dst: number, src: ArrayBufferView, bytes = src.byteLength): void {
    this.sync();
    this.check.cu(this.libs.cu.cuMemcpyHtoD(dst, src, bytes), `cuMemcpyHtoD(${fmtBytes(bytes)})`);
  }

  /** Synchronous download into JS memory (waits for the stream first). */
  download(dst: ArrayBufferView, src: number, bytes = dst.byteLength): void {
    this.sync();
    this.check.cu(this.libs.cu.cuMemcpyDtoH(dst, src, bytes), `cuMemcpyDtoH(${fmtBytes(bytes)})`);
  }

  /** Stream-ordered copy from pinned memory (recorded into a graph when capturing). */
  uploadAsync(dst: number, srcHostAddress: number, bytes: number): void {
    if (bytes === 0) return;
    this.check.cu(
      this.libs.cu.cuMemcpyHtoDAsync(dst, srcHostAddress, bytes, this.stream),
      'cuMemcpyHtoDAsync',
    );
  }

  /** Stream-ordered copy into pinned memory; read it after the stream passes a later event. */
  downloadAsync(dstHostAddress: number, src: number, bytes: number): void {
    if (this.capturing) throw new Error('cuda: device-to-host copy during graph capture');
    if (bytes === 0) return;
    this.check.cu(
      this.libs.cu.cuMemcpyDtoHAsync(dstHostAddress, src, bytes, this.stream),
      'cuMemcpyDtoHAsync',
    );
  }

  copyAsync(dst: number, src: number, bytes: number): void {
    if (bytes === 0) return;
    this.check.cu(
      this.libs.cu.cuMemcpyDtoDAsync(dst, src, bytes, this.stream),
      'cuMemcpyDtoDAsync',
    );
  }

  memsetAsync(dst: number, byte: number, bytes: number): void {
    if (bytes === 0) return;
    this.check.cu(this.libs.cu.cuMemsetD8Async(dst, byte, bytes, this.stream), 'cuMemsetD8Async');
  }

  sync(): void {
    this.check.cu(this.libs.cu.cuStreamSynchronize(this.stream), 'cuStreamSynchronize');
  }

  /**
   * Runs `f` between cuProfilerStart and cuProfilerStop, the stream drained on both sides: the
   * range a profiler started with `--profile-from-start off` (ncu) records, and nothing else.
   */
  profiled<T>(f: () => T): T {
    this.sync();
    this.check.cu(this.libs.cu.cuProfilerStart(), 'cuProfilerStart');
    try {
      return f();
    } finally {
      this.sync();
      this.check.cu(this.libs.cu.cuProfilerStop(), 'cuProfilerStop');
    }
  }

  setMaxDynamicSmem(fn: KernelFn, bytes: number): void {
    this.check.cu(
      this.libs.cu.cuFuncSetAttribute(
        fn.handle,
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        bytes,
      ),
      `cuFuncSetAttribute(${fn.name}, max dynamic smem ${bytes})`,
    );
  }

  /**
   * Launches `fn` on the stream. `sig` has one letter per argument (see ArgSig). The driver
   * copies the parameters during the call, so the one native argument block is reused.
   */
  launch(
    fn: KernelFn,
    grid: readonly [number, number, number],
    block: readonly [number, number, number],
    smem: number,
    sig: ArgSig,
    ...args: number[]
  ): void {
    if (!this.packArgs(fn, grid, sig, args)) return;
    const res = this.libs.cu.cuLaunchKernel(
      fn.handle,
      grid[0],
      grid[1],
      grid[2],
      block[0],
      block[1],
      block[2],
      smem,
      this.stream,
      this.paramArray,
      null,
    ) as number;
    if (res !== 0)
      this.check.cu(
        res,
        `cuLaunchKernel(${fn.name}, grid ${grid.join('x')}, block ${block.join('x')}, smem ${smem})`,
      );
  }

  /**
   * `launch`, allowed to overlap the previous kernel in the stream (programmatic dependent
   * launch, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION): the kernel must wait for
   * it (griddepcontrol.wait) before reading its outputs or writing what it reads. Graph
   * capture records the overlap as a programmatic edge.
   */
  launchOverlapped(
    fn: KernelFn,
    grid: readonly [number, number, number],
    block: readonly [number, number, number],
    smem: number,
    sig: ArgSig,
    ...args: number[]
  ): void {
    if (!this.packArgs(fn, grid, sig, args)) return;
    const c = this.launchConfig.view;
    [...grid, ...block, smem].forEach((d, i) => c.setUint32(4 * i, d, true));
    const res = this.libs.cu.cuLaunchKernelEx(
      this.launchConfig.address,
      fn.handle,
      this.paramArray,
      null,
    ) as number;
    if (res !== 0)
      this.check.cu(
        res,
        `cuLaunchKernelEx(${fn.name}, grid ${grid.join('x')}, block ${block.join('x')}, smem ${smem})`,
      );
  }

  /** Packs the arguments into the native block; false for an empty grid (nothing to launch). */
  private packArgs(
    fn: KernelFn,
    grid: readonly [number, number, number],
    sig: ArgSig,
    args: readonly number[],
  ): boolean {
    if (sig.length !== args.length)
      throw new Error(`launch ${fn.name}: ${sig.length} kinds, ${args.length} args`);
    const v = this.argView;
    for (let i = 0; i < args.length; i++) {
      const a = args[i]!;
      const off = i * 8;
      switch (sig.charCodeAt(i)) {
        case 112: // p
        case 108: // l
          v.setUint32(off, (a % 4294967296) >>> 0, true);
          v.setInt32(off + 4, Math.floor(a / 4294967296), true);
          break;
        case 105: // i
          v.setInt32(off, a, true);
          break;
        case 117: // u
          v.setUint32(off, a >>> 0, true);
          break;
        case 102: // f
          v.setFloat32(off, a, true);
          break;
        case 100: // d
          v.setFloat64(off, a, true);
          break;
        default:
          throw new Error(`launch ${fn.name}: bad arg kind ${sig[i]}`);
      }
    }
    return grid[0] !== 0 && grid[1] !== 0 && grid[2] !== 0;
  }

  /** `timing` false: CU_EVENT_DISABLE_TIMING, cheaper for pure ordering. */
  createEvent(timing = true): unknown {
    const e: [unknown] = [null];
    this.check.cu(this.libs.cu.cuEventCreate(e, timing ? 0 : 2), 'cuEventCreate');
    return e[0];
  }

  destroyEvent(ev: unknown): void {
    this.check.cu(this.libs.cu.cuEventDestroy(ev), 'cuEventDestroy');
  }

  /** Blocks until `ev`'s recorded work is done. */
  waitEvent(ev: unknown): void {
    this.check.cu(this.libs.cu.cuEventSynchronize(ev), 'cuEventSynchronize');
  }

  /** This stream's later work waits on the device for `ev` (no host wait; capturable). */
  streamWait(ev: unknown): void {
    this.check.cu(this.libs.cu.cuStreamWaitEvent(this.stream, ev, 0), 'cuStreamWaitEvent');
  }

  record(ev: unknown): void {
    this.check.cu(this.libs.cu.cuEventRecord(ev, this.stream), 'cuEventRecord');
  }

  /**
   * Resolves once the stream has passed `ev` (recorded earlier), without blocking the event
   * loop: cuEventQuery is polled from setImmediate, so HTTP writes and new requests are served
   * while the GPU works. Always yields at least once (I/O runs between steps even when the
   * GPU was faster than the host); costs one poll period (a few µs) after the GPU finishes.
   */
  async whenDone(ev: unknown): Promise<void> {
    for (;;) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      const res = this.libs.cu.cuEventQuery(ev) as number;
      if (res === 0) return;
      if (res !== CUDA_ERROR_NOT_READY) this.check.cu(res, 'cuEventQuery');
    }
  }

  /** Milliseconds between two recorded events (waits for `end`). */
  elapsed(start: unknown, end: unknown): number {
    this.check.cu(this.libs.cu.cuEventSynchronize(end), 'cuEventSynchronize');
    const ms = [0];
    this.check.cu(this.libs.cu.cuEventElapsedTime(ms, start, end), 'cuEventElapsedTime');
    return ms[0]!;
  }

  /** Starts recording this stream's work into a graph (ops must not read the host). */
  beginCapture(): void {
    this.check.cu(
      this.libs.cu.cuStreamBeginCapture(this.stream, CU_STREAM_CAPTURE_MODE_RELAXED),
      'cuStreamBeginCapture',
    );
    this.capturing = true;
  }

  /** Ends the recording started by beginCapture and instantiates the graph. */
  endCapture(): CudaGraph {
    const { cu } = this.libs;
    this.capturing = false;
    const graph: [unknown] = [null];
    this.check.cu(cu.cuStreamEndCapture(this.stream, graph), 'cuStreamEndCapture');
    const exec: [unknown] = [null];
    this.check.cu(cu.cuGraphInstantiate(exec, graph[0], 0), 'cuGraphInstantiateWithFlags');
    return new CudaGraph(this, graph[0], exec[0]);
  }

  /** Records everything the synchronous `fn` enqueues into an instantiated graph. */
  capture(fn: () => void): CudaGraph {
    this.beginCapture();
    try {
      fn();
    } catch (e) {
      try {
        this.endCapture().destroy();
      } catch {
        // the capture was already invalidated; report the first error
      }
      throw e;
    }
    return this.endCapture();
  }
}

export class CudaGraph {
  constructor(
    private readonly dev: CudaDevice,
    private graph: unknown,
    private exec: unknown,
  ) {}

  launch(): void {
    this.dev.check.cu(this.dev.libs.cu.cuGraphLaunch(this.exec, this.dev.stream), 'cuGraphLaunch');
  }

  destroy(): void {
    if (this.exec)
      this.dev.check.cu(this.dev.libs.cu.cuGraphExecDestroy(this.exec), 'cuGraphExecDestroy');
    if (this.graph)
      this.dev.check.cu(this.dev.libs.cu.cuGraphDestroy(this.graph), 'cuGraphDestroy');
    this.exec = null;
    this.graph = null;
  }
}

export function fmtBytes(n: number): string {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(2)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${n} B`;
}

const CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;

/**
 * Native CUlaunchConfig (cuda.h: 7 x u32 grid/block/smem, hStream at 32, attrs at 40,
 * numAttrs at 48; 56 bytes) followed at 64 by its one CUlaunchAttribute (id u32, pad to 8,
 * value union: programmaticStreamSerializationAllowed = 1).
 */
function overlapConfig(stream: number): { block: unknown; view: DataView; address: number } {
  const block = native.alloc(64 + 72);
  const view = new DataView(native.view(block, 64 + 72));
  const address = native.address(block);
  view.setBigUint64(32, BigInt(stream), true);
  view.setBigUint64(40, BigInt(address + 64), true);
  view.setUint32(48, 1, true);
  view.setUint32(64, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, true);
  view.setInt32(72, 1, true);
  return { block, view, address };
}
