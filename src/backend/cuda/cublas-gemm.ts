/**
 * GEMMs through cuBLAS (cublasGemmEx, and cublasGemmGroupedBatchedEx for the MoE's experts): bf16 or f32 operands, f32 accumulation
 * (CUBLAS_COMPUTE_32F, so f32 x f32 stays true f32, no TF32), bf16 or f32 output.
 * Row-major out[M, N] = x[M, K] . w[N, K]^T is column-major out^T = w^T(op T) . x^T.
 */
import type { CudaDevice } from './device.js';

const CUDA_R_32F = 0;
const CUDA_R_16BF = 14;
const CUBLAS_OP_N = 0;
const CUBLAS_OP_T = 1;
const CUBLAS_COMPUTE_32F = 68;
const CUBLAS_GEMM_DEFAULT = -1;
const WORKSPACE_BYTES = 64 * 2 ** 20;

export type GemmType = 'bf16' | 'f32';

/** A cuBLAS handle on its own stream with its own workspace (see CublasGemm.fork). */
interface Lane {
  readonly gemm: CublasGemm;
  readonly stream: unknown;
  readonly done: unknown;
}

/**
 * GEMMs on `n` lanes forked from the device stream: each runs after everything issued on the
 * device stream before the fork, concurrently with the other lanes' GEMMs; `join` makes the
 * device stream's later work wait for all of them (events, no host wait).
 */
export interface GemmLanes {
  readonly count: number;
  gemm(lane: number, ...args: Parameters<CublasGemm['gemm']>): void;
  join(): void;
}

export class CublasGemm {
  private readonly handle: unknown;
  private readonly one = new Float32Array([1]);
  private readonly zero = new Float32Array([0]);
  readonly version: number;
  private readonly lanes: Lane[] = [];
  private forkEvent: unknown = null;

  constructor(
    private readonly dev: CudaDevice,
    stream: unknown = dev.stream,
  ) {
    const { cublas } = dev.libs;
    const h: [unknown] = [null];
    dev.check.cublas(cublas.cublasCreate(h), 'cublasCreate');
    this.handle = h[0];
    dev.check.cublas(cublas.cublasSetStream(this.handle, stream), 'cublasSetStream');
    // A fixed workspace: cuBLAS must not allocate while a CUDA graph is being captured.
    const ws = dev.malloc(WORKSPACE_BYTES, 'cuBLAS workspace');
    dev.check.cublas(
      cublas.cublasSetWorkspace(this.handle, ws, WORKSPACE_BYTES),
      'cublasSetWorkspace',
    );
    const v = [0];
    dev.check.cublas(cublas.cublasGetVersion(this.handle, v), 'cublasGetVersion');
    this.version = v[0]!;
  }

  /**
   * A grouped GEMM in one call (cublasGemmGroupedBatchedEx, one group per problem): problem i is
   * out_i[rows[i], N] = x_i[rows[i], K] . w_i[N, K]^T, bf16 operands, f32 accumulation.
   * `ptrs` is a device array of 3 * rows.length pointers: every w_i, then every x_i, then every
   * out_i.
   */
  grouped(ptrs: number, outType: GemmType, rows: Int32Array, N: number, K: number): void {
    const call = this.dev.libs.cublas.cublasGemmGroupedBatchedEx;
    if (!call) throw new Error(`cuBLAS ${this.version} has no cublasGemmGroupedBatchedEx (12.5+)`);
    const n = rows.length;
    if (n === 0) return;
    const fill = (v: number) => new Int32Array(n).fill(v);
    const ones = new Float32Array(n).fill(1);
    const res = call(
      this.handle,
      fill(CUBLAS_OP_T),
      fill(CUBLAS_OP_N),
      fill(N),
      rows,
      fill(K),
      ones,
      ptrs,
      CUDA_R_16BF,
      fill(K),
      ptrs + n * 8,
      CUDA_R_16BF,
      fill(K),
      new Float32Array(n),
      ptrs + 2 * n * 8,
      outType === 'bf16' ? CUDA_R_16BF : CUDA_R_32F,
      fill(N),
      n,
      fill(1),
      CUBLAS_COMPUTE_32F,
    ) as number;
    if (res !== 0)
      this.dev.check.cublas(res, `cublasGemmGroupedBatchedEx(${n} problems, N=${N}, K=${K})`);
  }

  /**
   * `n` lanes (created on first use, then kept: a stream, a handle and a 64 MiB workspace
   * each) forked from the device stream. For independent GEMMs too small to fill the GPU
   * alone (the MoE's per-expert GEMMs at prefill); never while a graph is captured.
   */
  fork(n: number): GemmLanes {
    const { dev } = this;
    if (dev.isCapturing) throw new Error('cuBLAS lanes: not while a CUDA graph is captured');
    const { cu } = dev.libs;
    while (this.lanes.length < n) {
      const st: [unknown] = [null];
      dev.check.cu(cu.cuStreamCreate(st, 0), 'cuStreamCreate');
      this.lanes.push({
        gemm: new CublasGemm(dev, st[0]),
        stream: st[0],
        done: dev.createEvent(false),
      });
    }
    this.forkEvent ??= dev.createEvent(false);
    dev.record(this.forkEvent);
    const lanes = this.lanes.slice(0, n);
    for (const l of lanes)
      dev.check.cu(cu.cuStreamWaitEvent(l.stream, this.forkEvent, 0), 'cuStreamWaitEvent');
    return {
      count: n,
      gemm: (lane, ...args) => lanes[lane]!.gemm.gemm(...args),
      join: () => {
        for (const l of lanes) {
          dev.check.cu(cu.cuEventRecord(l.done, l.stream), 'cuEventRecord');
          dev.streamWait(l.done);
        }
      },
    };
  }

  /** Whether `grouped` is available (cuBLAS 12.5+). */
  get hasGrouped(): boolean {
    return this.dev.libs.cublas.cublasGemmGroupedBatchedEx !== null;
  }

  /** out[M, N] = x[M, K] . w[N, K]^T (optionally += when accumulate). */
  gemm(
    out: number,
    outType: GemmType,
    x: number,
    w: number,
    inType: GemmType,
    M: number,
    N: number,
    K: number,
    accumulate = false,
  ): void {
    const t = (d: GemmType): number => (d === 'bf16' ? CUDA_R_16BF : CUDA_R_32F);
    const res = this.dev.libs.cublas.cublasGemmEx(
      this.handle,
      CUBLAS_OP_T,
      CUBLAS_OP_N,
      N,
      M,
      K,
      this.one,
      w,
      t(inType),
      K,
      x,
      t(inType),
      K,
      accumulate ? this.one : this.zero,
      out,
      t(outType),
      N,
      CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT,
    ) as number;
    if (res !== 0)
      this.dev.check.cublas(res, `cublasGemmEx(M=${M}, N=${N}, K=${K}, ${inType} -> ${outType})`);
  }
}
