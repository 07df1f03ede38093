/**
 * Block-scaled FP8 GEMMs (W8A8) through cuBLASLt on Hopper: out[M, N] = x8[M, K] · w8[N, K]^T
 * with E4M3 operands, x's f32 scales per row and 128 inputs (CUBLASLT_MATMUL_MATRIX_SCALE_
 * VEC128_32F, [K/128][M]), the weight's per 128 × 128 block (BLK128x128_32F, [ceil(N/128)][K/128
 * padded to 4]) or per row and 128 inputs (VEC128_32F, [K/128][N]); f32 accumulation, bf16 or
 * f32 out. Column-major view as in cublas-gemm.ts: out^T = (w as K × N, op T) · (x as K × M).
 * bench/fp8-lt-probe.ts measured it (session 7 W2, one H200): 1,266–1,373 TFLOP/s against
 * cuBLAS bf16's 747–818 at the prefill shapes.
 *
 * Descriptors, layouts and the heuristic's algorithm are made once per shape and kept; each
 * call sets the two scale pointers on its descriptor (read by cublasLtMatmul when it is
 * called). Lanes (own stream and workspace each) run independent GEMMs concurrently: the MoE's
 * per-expert GEMMs, each too small to fill the GPU.
 */
import type { CudaDevice } from './device.js';

const CUDA_R_16BF = 14;
const CUDA_R_32F = 0;
const CUDA_R_8F_E4M3 = 28;
const COMPUTE_32F = 68;
const TRANSA = 3;
const TRANSB = 4;
const A_SCALE_POINTER = 17;
const B_SCALE_POINTER = 18;
const A_SCALE_MODE = 31;
const B_SCALE_MODE = 32;
const SCALE_VEC128 = 4;
const SCALE_BLK128 = 5;
const PREF_MAX_WORKSPACE = 1;
const WS_BYTES = 32 << 20;
/** cublasLtMatmulHeuristicResult_t: algo (64 bytes), workspaceSize, state, waves, 4 reserved. */
const RESULT_BYTES = 96;

/**
 * Row counts (M) cuBLASLt's block-scaled FP8 matmul takes: multiples of 4 (session 8 W3, one
 * H200, cuBLAS 13.1: NOT_SUPPORTED at M = 41, 58, 257, 411; M = 300 ran). Callers pad.
 */
export const LT_ROWS = 4;

/** M rounded up to LT_ROWS. */
export function ltRows(M: number): number {
  return Math.ceil(M / LT_ROWS) * LT_ROWS;
}

/** How a weight's scales are laid out for cuBLASLt. */
export type LtWeightScales = 'blk128' | 'vec128';

export interface LtOperands {
  readonly out: number;
  readonly outType: 'bf16' | 'f32';
  /** E4M3 codes [M, K] and VEC128 scales [K/128][M]. */
  readonly x8: number;
  readonly xs: number;
  /** E4M3 codes [N, K] and scales in `wMode`'s layout. */
  readonly w8: number;
  readonly ws: number;
  readonly wMode: LtWeightScales;
}

interface Plan {
  readonly op: unknown;
  readonly a: unknown;
  readonly b: unknown;
  readonly d: unknown;
  readonly algo: Uint8Array;
}

interface Lane {
  readonly stream: unknown;
  readonly ws: number;
  readonly done: unknown;
}

export interface LtLanes {
  readonly count: number;
  matmul(lane: number, p: LtOperands, M: number, N: number, K: number): void;
  join(): void;
}

const perDevice = new WeakMap<CudaDevice, LtFp8Gemm>();

/** The device's cuBLASLt W8A8 GEMMs, made at the first one (its workspace allocated then). */
export function ltFor(dev: CudaDevice): LtFp8Gemm {
  let lt = perDevice.get(dev);
  if (!lt) {
    lt = new LtFp8Gemm(dev);
    perDevice.set(dev, lt);
  }
  return lt;
}

export class LtFp8Gemm {
  private readonly h: unknown;
  private readonly ws: number;
  private readonly plans = new Map<string, Plan>();
  private readonly lanes: Lane[] = [];
  private forkEvent: unknown = null;
  private readonly alpha = new Float32Array([1]);
  private readonly beta = new Float32Array([0]);
  private readonly ptr = new BigUint64Array(1);

  constructor(private readonly dev: CudaDevice) {
    const lt = dev.libs.cublasLt;
    if (!lt.cublasLtCreate || !lt.cublasLtMatmul)
      throw new Error('W8A8: this cuBLASLt has no cublasLtMatmul (CUDA 12.9+ is needed)');
    const h: [unknown] = [null];
    this.ok(lt.cublasLtCreate(h) as number, 'cublasLtCreate');
    this.h = h[0];
    this.ws = dev.malloc(WS_BYTES, 'cuBLASLt workspace');
  }

  /** out = x8 · w8^T on the device stream. */
  matmul(p: LtOperands, M: number, N: number, K: number): void {
    this.run(p, M, N, K, this.dev.stream, this.ws);
  }

  /**
   * `n` lanes forked from the device stream (each starts after everything enqueued before the
   * fork); `join` makes the device stream's later work wait for all of them. Not in capture.
   */
  fork(n: number): LtLanes {
    const { dev } = this;
    if (dev.isCapturing) throw new Error('cuBLASLt lanes: not while a CUDA graph is captured');
    const { cu } = dev.libs;
    while (this.lanes.length < n) {
      const st: [unknown] = [null];
      dev.check.cu(cu.cuStreamCreate(st, 0), 'cuStreamCreate');
      this.lanes.push({
        stream: st[0],
        ws: dev.malloc(WS_BYTES, 'cuBLASLt lane workspace'),
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
      matmul: (lane, p, M, N, K) => this.run(p, M, N, K, lanes[lane]!.stream, lanes[lane]!.ws),
      join: () => {
        for (const l of lanes) {
          dev.check.cu(cu.cuEventRecord(l.done, l.stream), 'cuEventRecord');
          dev.streamWait(l.done);
        }
      },
    };
  }

  private run(p: LtOperands, M: number, N: number, K: number, stream: unknown, ws: number): void {
    const plan = this.plan(M, N, K, p);
    this.setPtr(plan.op, A_SCALE_POINTER, p.ws);
    this.setPtr(plan.op, B_SCALE_POINTER, p.xs);
    const mm = this.dev.libs.cublasLt.cublasLtMatmul!;
    const res = mm(
      this.h,
      plan.op,
      this.alpha,
      p.w8,
      plan.a,
      p.x8,
      plan.b,
      this.beta,
      p.out,
      plan.d,
      p.out,
      plan.d,
      plan.algo,
      ws,
      WS_BYTES,
      stream,
    ) as number;
    this.ok(res, `cublasLtMatmul (W8A8 M=${M}, N=${N}, K=${K}, ${p.wMode} weight scales)`);
  }

  private plan(M: number, N: number, K: number, p: LtOperands) {
    const { outType, wMode: mode } = p;
    const key = `${M} ${N} ${K} ${outType} ${mode}`;
    let plan = this.plans.get(key);
    if (plan) return plan;
    const lt = this.dev.libs.cublasLt;
    const op = this.make(
      (o) => this.fn(lt.cublasLtMatmulDescCreate)(o, COMPUTE_32F, CUDA_R_32F) as number,
      'cublasLtMatmulDescCreate',
    );
    this.setI32(op, TRANSA, 1);
    this.setI32(op, TRANSB, 0);
    this.setI32(op, A_SCALE_MODE, mode === 'blk128' ? SCALE_BLK128 : SCALE_VEC128);
    this.setI32(op, B_SCALE_MODE, SCALE_VEC128);
    // The heuristic needs the scale pointers set (session 8 W2: status 7 without them).
    this.setPtr(op, A_SCALE_POINTER, p.ws);
    this.setPtr(op, B_SCALE_POINTER, p.xs);
    const layout = (type: number, rows: number, cols: number, ld: number): unknown =>
      this.make(
        (o) => this.fn(lt.cublasLtMatrixLayoutCreate)(o, type, rows, cols, ld) as number,
        'cublasLtMatrixLayoutCreate',
      );
    const a = layout(CUDA_R_8F_E4M3, K, N, K);
    const b = layout(CUDA_R_8F_E4M3, K, M, K);
    const d = layout(outType === 'bf16' ? CUDA_R_16BF : CUDA_R_32F, N, M, N);
    plan = { op, a, b, d, algo: this.algo(op, a, b, d, key) };
    this.plans.set(key, plan);
    return plan;
  }

  /** The heuristic's first algorithm (64 bytes); an error naming the shape where there is none. */
  private algo(op: unknown, a: unknown, b: unknown, d: unknown, key: string): Uint8Array {
    const lt = this.dev.libs.cublasLt;
    const pref = this.make(
      (o) => this.fn(lt.cublasLtMatmulPreferenceCreate)(o) as number,
      'cublasLtMatmulPreferenceCreate',
    );
    this.ptr[0] = BigInt(WS_BYTES);
    this.ok(
      this.fn(lt.cublasLtMatmulPreferenceSetAttribute)(
        pref,
        PREF_MAX_WORKSPACE,
        this.ptr,
        8,
      ) as number,
      'cublasLtMatmulPreferenceSetAttribute',
    );
    const results = new Uint8Array(RESULT_BYTES);
    const count = [0];
    const res = this.fn(lt.cublasLtMatmulAlgoGetHeuristic)(
      this.h,
      op,
      a,
      b,
      d,
      d,
      pref,
      1,
      results,
      count,
    ) as number;
    if (res !== 0 || count[0] === 0)
      throw new Error(
        `W8A8: cuBLASLt has no block-scaled FP8 algorithm for (M N K out weight-scales) ${key} (status ${res}, ${count[0]} results)`,
      );
    return results.slice(0, 64);
  }

  private setI32(op: unknown, attr: number, v: number): void {
    const buf = new Int32Array([v]);
    const set = this.fn(this.dev.libs.cublasLt.cublasLtMatmulDescSetAttribute);
    this.ok(set(op, attr, buf, 4) as number, `cublasLtMatmulDescSetAttribute(${attr})`);
  }

  private setPtr(op: unknown, attr: number, ptr: number): void {
    this.ptr[0] = BigInt(ptr);
    const set = this.fn(this.dev.libs.cublasLt.cublasLtMatmulDescSetAttribute);
    this.ok(set(op, attr, this.ptr, 8) as number, `cublasLtMatmulDescSetAttribute(${attr})`);
  }

  private make(create: (o: [unknown]) => number, what: string): unknown {
    const o: [unknown] = [null];
    this.ok(create(o), what);
    return o[0];
  }

  private fn<T>(f: T | null): T {
    if (!f) throw new Error('W8A8: this cuBLASLt lacks the matmul API');
    return f;
  }

  private ok(res: number, what: string): void {
    if (res !== 0) this.dev.check.cublas(res, what);
  }
}
