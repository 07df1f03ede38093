/**
 * Status checks for the CUDA driver, NVRTC and cuBLAS: every call's result goes through one
 * of these, and the thrown error carries the library's own error name (cuGetErrorName,
 * nvrtcGetErrorString, cublasGetStatusName) and what was being done.
 */
import type { CudaLibs } from './ffi.js';

export class CudaError extends Error {
  override name = 'CudaError';
  constructor(
    message: string,
    readonly library: 'cuda' | 'nvrtc' | 'cublas',
    readonly code: number,
  ) {
    super(message);
  }
}

export class Checker {
  constructor(private readonly libs: CudaLibs) {}

  /** CUresult: 0 is CUDA_SUCCESS. */
  cu(res: number, what: string): void {
    if (res === 0) return;
    const name: [string | null] = [null];
    const desc: [string | null] = [null];
    this.libs.cu.cuGetErrorName(res, name);
    this.libs.cu.cuGetErrorString(res, desc);
    throw new CudaError(
      `${what}: ${name[0] ?? `CUresult ${res}`}${desc[0] ? ` (${desc[0]})` : ''}`,
      'cuda',
      res,
    );
  }

  /** nvrtcResult: 0 is NVRTC_SUCCESS. `log` is appended for compile errors. */
  nvrtc(res: number, what: string, log = ''): void {
    if (res === 0) return;
    const name =
      (this.libs.nvrtc.nvrtcGetErrorString(res) as string | null) ?? `nvrtcResult ${res}`;
    throw new CudaError(`${what}: ${name}${log ? `\n${log}` : ''}`, 'nvrtc', res);
  }

  /** cublasStatus_t: 0 is CUBLAS_STATUS_SUCCESS. */
  cublas(res: number, what: string): void {
    if (res === 0) return;
    const name =
      (this.libs.cublas.cublasGetStatusName(res) as string | null) ?? `cublasStatus ${res}`;
    throw new CudaError(`${what}: ${name}`, 'cublas', res);
  }
}
