/**
 * Every koffi declaration of the CUDA backend, in one place: the driver API (libcuda), NVRTC,
 * cuBLAS and cuBLASLt. Only this file imports koffi, and only when the CUDA backend is
 * created (cuda/index.ts imports it dynamically), so nothing else in the project needs CUDA.
 *
 * Conventions: handles (context, module, function, stream, event, graph, cuBLAS handle) are
 * koffi externals (`void *`); device addresses (CUdeviceptr) are plain numbers ('uint64_t');
 * every function returns its library's status code, checked by check.ts.
 */
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import koffi from 'koffi';
import { findLibrary, type CudaLibrary } from './library-paths.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Fn = (...args: any[]) => any;
type Lib = ReturnType<typeof koffi.load>;

export class CudaLoadError extends Error {
  override name = 'CudaLoadError';
}

function open(lib: CudaLibrary): { lib: Lib; path: string } {
  const { path, tried } = findLibrary(lib);
  try {
    return { lib: koffi.load(path), path };
  } catch (e) {
    const where = tried.length > 1 ? ` (looked in ${tried.length} places, e.g. ${tried[0]})` : '';
    throw new CudaLoadError(`cannot load ${path}${where}: ${(e as Error).message.split('\n')[0]}`);
  }
}

/** Declares the first symbol of `names` the library exports, with the C signature `sig` ('%' = name). */
function decl(lib: Lib, names: readonly string[], sig: string): Fn {
  for (const name of names) {
    try {
      return lib.func(sig.replace('%', name)) as Fn;
    } catch {
      // try the next spelling (e.g. _v2 / unversioned)
    }
  }
  throw new CudaLoadError(`symbol ${names.join(' / ')} not found`);
}

/** A symbol newer libraries have: null when this one lacks it. */
function optional(declare: () => Fn): Fn | null {
  try {
    return declare();
  } catch (e) {
    if (e instanceof CudaLoadError) return null;
    throw e;
  }
}

function declareDriver(lib: Lib) {
  const d = (names: string | readonly string[], sig: string): Fn =>
    decl(lib, typeof names === 'string' ? [names] : names, sig);
  return {
    cuInit: d('cuInit', 'int %(uint32_t flags)'),
    cuDriverGetVersion: d('cuDriverGetVersion', 'int %(_Out_ int *v)'),
    cuGetErrorName: d('cuGetErrorName', 'int %(int err, _Out_ const char **s)'),
    cuGetErrorString: d('cuGetErrorString', 'int %(int err, _Out_ const char **s)'),
    cuDeviceGetCount: d('cuDeviceGetCount', 'int %(_Out_ int *n)'),
    cuDeviceGet: d('cuDeviceGet', 'int %(_Out_ int *dev, int ordinal)'),
    cuDeviceGetName: d('cuDeviceGetName', 'int %(_Out_ uint8_t *name, int len, int dev)'),
    cuDeviceGetAttribute: d('cuDeviceGetAttribute', 'int %(_Out_ int *v, int attr, int dev)'),
    cuDevicePrimaryCtxRetain: d('cuDevicePrimaryCtxRetain', 'int %(_Out_ void **ctx, int dev)'),
    cuCtxSetCurrent: d('cuCtxSetCurrent', 'int %(void *ctx)'),
    cuCtxSynchronize: d('cuCtxSynchronize', 'int %()'),
    cuProfilerStart: d('cuProfilerStart', 'int %()'),
    cuProfilerStop: d('cuProfilerStop', 'int %()'),
    cuMemGetInfo: d(
      ['cuMemGetInfo_v2', 'cuMemGetInfo'],
      'int %(_Out_ size_t *free, _Out_ size_t *total)',
    ),
    cuMemAlloc: d(['cuMemAlloc_v2', 'cuMemAlloc'], 'int %(_Out_ uint64_t *dptr, size_t bytes)'),
    cuMemFree: d(['cuMemFree_v2', 'cuMemFree'], 'int %(uint64_t dptr)'),
    cuMemAllocHost: d(
      ['cuMemAllocHost_v2', 'cuMemAllocHost'],
      'int %(_Out_ void **p, size_t bytes)',
    ),
    cuMemFreeHost: d('cuMemFreeHost', 'int %(void *p)'),
    /** Synchronous copies from / to JS memory (typed arrays, Buffers). */
    cuMemcpyHtoD: d(
      ['cuMemcpyHtoD_v2', 'cuMemcpyHtoD'],
      'int %(uint64_t dst, const void *src, size_t n)',
    ),
    cuMemcpyDtoH: d(
      ['cuMemcpyDtoH_v2', 'cuMemcpyDtoH'],
      'int %(void *dst, uint64_t src, size_t n)',
    ),
    /** Asynchronous copy from pinned host memory given by address (capturable). */
    cuMemcpyHtoDAsync: d(
      ['cuMemcpyHtoDAsync_v2', 'cuMemcpyHtoDAsync'],
      'int %(uint64_t dst, uint64_t srcHost, size_t n, void *stream)',
    ),
    /** Asynchronous copy to pinned host memory given by address. */
    cuMemcpyDtoHAsync: d(
      ['cuMemcpyDtoHAsync_v2', 'cuMemcpyDtoHAsync'],
      'int %(uint64_t dstHost, uint64_t src, size_t n, void *stream)',
    ),
    cuMemcpyDtoDAsync: d(
      ['cuMemcpyDtoDAsync_v2', 'cuMemcpyDtoDAsync'],
      'int %(uint64_t dst, uint64_t src, size_t n, void *stream)',
    ),
    cuMemsetD8Async: d('cuMemsetD8Async', 'int %(uint64_t dst, uint8_t v, size_t n, void *stream)'),
    cuMemsetD32Async: d(
      'cuMemsetD32Async',
      'int %(uint64_t dst, uint32_t v, size_t n, void *stream)',
    ),
    cuModuleLoadData: d('cuModuleLoadData', 'int %(_Out_ void **mod, const void *image)'),
    cuModuleGetFunction: d(
      'cuModuleGetFunction',
      'int %(_Out_ void **fn, void *mod, const char *name)',
    ),
    cuFuncSetAttribute: d('cuFuncSetAttribute', 'int %(void *fn, int attr, int value)'),
    cuLaunchKernel: d(
      'cuLaunchKernel',
      'int %(void *fn, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx, uint32_t by, uint32_t bz, uint32_t smem, void *stream, uint64_t params, void *extra)',
    ),
    /** config: the address of a CUlaunchConfig (device.ts builds it in native memory). */
    cuLaunchKernelEx: d(
      'cuLaunchKernelEx',
      'int %(uint64_t config, void *fn, uint64_t params, void *extra)',
    ),
    ...declareDriverExec(d),
    ...declareDriverIpc(d),
  };
}

/** Bytes of a CUipcMemHandle (CU_IPC_HANDLE_SIZE). */
export const CU_IPC_HANDLE_BYTES = 64;

/**
 * CUDA IPC of device memory (split from declareDriver). The handle is
 * `struct { char reserved[64]; }`, declared with uint8_t so koffi keeps every byte (a char
 * array would become a string cut at the first zero); cuIpcOpenMemHandle takes it by value.
 */
function declareDriverIpc(d: (names: string | readonly string[], sig: string) => Fn) {
  koffi.struct('CUipcMemHandle', {
    reserved: koffi.array('uint8_t', CU_IPC_HANDLE_BYTES, 'Typed'),
  });
  return {
    cuIpcGetMemHandle: d('cuIpcGetMemHandle', 'int %(_Out_ CUipcMemHandle *handle, uint64_t dptr)'),
    cuIpcOpenMemHandle: d(
      ['cuIpcOpenMemHandle_v2', 'cuIpcOpenMemHandle'],
      'int %(_Out_ uint64_t *dptr, CUipcMemHandle handle, uint32_t flags)',
    ),
    cuIpcCloseMemHandle: d('cuIpcCloseMemHandle', 'int %(uint64_t dptr)'),
  };
}

/** Streams, events and graphs (split from declareDriver to keep functions short). */
function declareDriverExec(d: (names: string | readonly string[], sig: string) => Fn) {
  return {
    cuStreamCreate: d('cuStreamCreate', 'int %(_Out_ void **stream, uint32_t flags)'),
    cuStreamSynchronize: d('cuStreamSynchronize', 'int %(void *stream)'),
    cuEventCreate: d('cuEventCreate', 'int %(_Out_ void **ev, uint32_t flags)'),
    cuEventRecord: d('cuEventRecord', 'int %(void *ev, void *stream)'),
    cuEventSynchronize: d('cuEventSynchronize', 'int %(void *ev)'),
    /** The stream waits on the device for `ev` (capturable: forks/joins a captured graph). */
    cuStreamWaitEvent: d('cuStreamWaitEvent', 'int %(void *stream, void *ev, uint32_t flags)'),
    /** 0 = done, 600 (CUDA_ERROR_NOT_READY) = still pending. */
    cuEventQuery: d('cuEventQuery', 'int %(void *ev)'),
    cuEventElapsedTime: d(
      ['cuEventElapsedTime_v2', 'cuEventElapsedTime'],
      'int %(_Out_ float *ms, void *start, void *end)',
    ),
    cuEventDestroy: d(['cuEventDestroy_v2', 'cuEventDestroy'], 'int %(void *ev)'),
    cuStreamBeginCapture: d(
      ['cuStreamBeginCapture_v2', 'cuStreamBeginCapture'],
      'int %(void *stream, int mode)',
    ),
    cuStreamEndCapture: d('cuStreamEndCapture', 'int %(void *stream, _Out_ void **graph)'),
    cuGraphInstantiate: d(
      ['cuGraphInstantiateWithFlags'],
      'int %(_Out_ void **exec, void *graph, uint64_t flags)',
    ),
    cuGraphLaunch: d('cuGraphLaunch', 'int %(void *exec, void *stream)'),
    cuGraphExecDestroy: d('cuGraphExecDestroy', 'int %(void *exec)'),
    cuGraphDestroy: d('cuGraphDestroy', 'int %(void *graph)'),
  };
}

/**
 * NVRTC dlopens libnvrtc-builtins by name at compile time; loading it first from NVRTC's own
 * folder makes that lookup succeed without LD_LIBRARY_PATH.
 */
function preloadNvrtcBuiltins(nvrtcPath: string): void {
  const dir = dirname(nvrtcPath);
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((f) => /^libnvrtc-builtins\.so\.[0-9.]+$/.test(f));
  } catch {
    return;
  }
  for (const f of names) {
    try {
      koffi.load(join(dir, f));
    } catch {
      // NVRTC reports a missing builtins library itself, with its own message.
    }
  }
}

function declareNvrtc(lib: Lib) {
  const d = (name: string, sig: string): Fn => decl(lib, [name], sig);
  return {
    nvrtcVersion: d('nvrtcVersion', 'int %(_Out_ int *major, _Out_ int *minor)'),
    nvrtcGetErrorString: d('nvrtcGetErrorString', 'const char *%(int res)'),
    nvrtcCreateProgram: d(
      'nvrtcCreateProgram',
      'int %(_Out_ void **prog, const char *src, const char *name, int nHeaders, const char **headers, const char **includeNames)',
    ),
    nvrtcCompileProgram: d(
      'nvrtcCompileProgram',
      'int %(void *prog, int nOpts, const char **opts)',
    ),
    nvrtcGetProgramLogSize: d('nvrtcGetProgramLogSize', 'int %(void *prog, _Out_ size_t *n)'),
    nvrtcGetProgramLog: d('nvrtcGetProgramLog', 'int %(void *prog, _Out_ uint8_t *log)'),
    nvrtcGetCUBINSize: d('nvrtcGetCUBINSize', 'int %(void *prog, _Out_ size_t *n)'),
    nvrtcGetCUBIN: d('nvrtcGetCUBIN', 'int %(void *prog, _Out_ uint8_t *cubin)'),
    nvrtcDestroyProgram: d('nvrtcDestroyProgram', 'int %(_Inout_ void **prog)'),
  };
}

function declareCublas(lib: Lib) {
  const d = (names: string | readonly string[], sig: string): Fn =>
    decl(lib, typeof names === 'string' ? [names] : names, sig);
  return {
    cublasCreate: d(['cublasCreate_v2'], 'int %(_Out_ void **handle)'),
    cublasGetVersion: d(['cublasGetVersion_v2'], 'int %(void *handle, _Out_ int *v)'),
    cublasSetStream: d(['cublasSetStream_v2'], 'int %(void *handle, void *stream)'),
    cublasSetWorkspace: d(
      ['cublasSetWorkspace_v2'],
      'int %(void *handle, uint64_t ws, size_t bytes)',
    ),
    cublasSetMathMode: d('cublasSetMathMode', 'int %(void *handle, int mode)'),
    cublasGetStatusName: d('cublasGetStatusName', 'const char *%(int status)'),
    cublasGemmEx: d(
      'cublasGemmEx',
      'int %(void *h, int ta, int tb, int m, int n, int k, const void *alpha, uint64_t A, int At, int lda, uint64_t B, int Bt, int ldb, const void *beta, uint64_t C, int Ct, int ldc, int compute, int algo)',
    ),
    // Problem arrays (ta..k, lda.., alpha/beta per group, groupSize) on the host; A, B, C are
    // device arrays of device pointers. cuBLAS 12.5+: null before (the MoE then loops).
    cublasGemmGroupedBatchedEx: optional(() =>
      d(
        'cublasGemmGroupedBatchedEx',
        'int %(void *h, const int *ta, const int *tb, const int *m, const int *n, const int *k, const void *alpha, uint64_t A, int At, const int *lda, uint64_t B, int Bt, const int *ldb, const void *beta, uint64_t C, int Ct, const int *ldc, int groupCount, const int *groupSize, int compute)',
      ),
    ),
    cublasGemmStridedBatchedEx: d(
      'cublasGemmStridedBatchedEx',
      'int %(void *h, int ta, int tb, int m, int n, int k, const void *alpha, uint64_t A, int At, int lda, int64_t sA, uint64_t B, int Bt, int ldb, int64_t sB, const void *beta, uint64_t C, int Ct, int ldc, int64_t sC, int batch, int compute, int algo)',
    ),
  };
}

function declareCublasLt(lib: Lib) {
  const o = (name: string, sig: string): Fn | null => optional(() => decl(lib, [name], sig));
  return {
    cublasLtGetVersion: decl(lib, ['cublasLtGetVersion'], 'size_t %()'),
    // The FP8 matmul with block scales (bench/fp8-lt-probe.ts); null where the library lacks it.
    cublasLtCreate: o('cublasLtCreate', 'int %(_Out_ void **h)'),
    cublasLtMatmulDescCreate: o(
      'cublasLtMatmulDescCreate',
      'int %(_Out_ void **d, int compute, int scaleType)',
    ),
    cublasLtMatmulDescSetAttribute: o(
      'cublasLtMatmulDescSetAttribute',
      'int %(void *d, int attr, const void *buf, size_t bytes)',
    ),
    cublasLtMatrixLayoutCreate: o(
      'cublasLtMatrixLayoutCreate',
      'int %(_Out_ void **l, int type, uint64_t rows, uint64_t cols, int64_t ld)',
    ),
    cublasLtMatmulPreferenceCreate: o('cublasLtMatmulPreferenceCreate', 'int %(_Out_ void **p)'),
    cublasLtMatmulPreferenceSetAttribute: o(
      'cublasLtMatmulPreferenceSetAttribute',
      'int %(void *p, int attr, const void *buf, size_t bytes)',
    ),
    cublasLtMatmulAlgoGetHeuristic: o(
      'cublasLtMatmulAlgoGetHeuristic',
      'int %(void *h, void *op, void *A, void *B, void *C, void *D, void *pref, int requested, _Out_ uint8_t *results, _Out_ int *count)',
    ),
    cublasLtMatmul: o(
      'cublasLtMatmul',
      'int %(void *h, void *op, const void *alpha, uint64_t A, void *Ad, uint64_t B, void *Bd, const void *beta, uint64_t C, void *Cd, uint64_t D, void *Dd, const uint8_t *algo, uint64_t ws, size_t wsBytes, void *stream)',
    ),
  };
}

export type DriverApi = ReturnType<typeof declareDriver>;
export type NvrtcApi = ReturnType<typeof declareNvrtc>;
export type CublasApi = ReturnType<typeof declareCublas>;
export type CublasLtApi = ReturnType<typeof declareCublasLt>;

export interface CudaLibs {
  readonly cu: DriverApi;
  readonly nvrtc: NvrtcApi;
  readonly cublas: CublasApi;
  readonly cublasLt: CublasLtApi;
  readonly paths: Readonly<Record<CudaLibrary, string>>;
}

let cached: CudaLibs | null = null;

/** Loads and declares all four libraries once per process. Throws CudaLoadError. */
export function loadCudaLibs(): CudaLibs {
  if (cached) return cached;
  const cuda = open('cuda');
  const nvrtc = open('nvrtc');
  preloadNvrtcBuiltins(nvrtc.path);
  const cublasLt = open('cublasLt');
  const cublas = open('cublas');
  cached = {
    cu: declareDriver(cuda.lib),
    nvrtc: declareNvrtc(nvrtc.lib),
    cublas: declareCublas(cublas.lib),
    cublasLt: declareCublasLt(cublasLt.lib),
    paths: { cuda: cuda.path, nvrtc: nvrtc.path, cublas: cublas.path, cublasLt: cublasLt.path },
  };
  return cached;
}

/** NVRTC alone (compiling kernels needs no GPU: used by the offline compile check). */
export function loadNvrtcOnly(): NvrtcApi {
  const nv = open('nvrtc');
  preloadNvrtcBuiltins(nv.path);
  return declareNvrtc(nv.lib);
}

/** Native (non-JS-heap) memory for kernel arguments and pinned staging views. */
export const native = {
  alloc(bytes: number): unknown {
    return koffi.alloc('uint8_t', bytes);
  },
  address(p: unknown): number {
    return Number(koffi.address(p));
  },
  view(p: unknown, bytes: number): ArrayBuffer {
    return koffi.view(p, bytes);
  },
};
