/**
 * Probe for issue 13's prefill bullet: block-scaled FP8 GEMMs (W8A8) through cuBLASLt on
 * Hopper, out[M, N] = x8[M, K] · w8[N, K]^T with E4M3 operands and f32 scales, x per row and
 * 128 inputs (CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F), the weight per 128 × 128 block
 * (BLK128x128_32F) or per row and 128 inputs (VEC128_32F); against cuBLAS bf16 on the same
 * shapes (TFLOP/s), and the relative error against bf16 on the dequantized operands (both
 * operands are the codes · scales the FP8 GEMM reads, so only summation and the bf16 rounding
 * of the dequantized copies differ). Not a model path: it measures what a W8A8 prefill would
 * gain before the CPU reference learns activation quantization.
 *   node dist/gpu/bench/fp8-lt-probe.js [--out DIR]
 * Writes fp8-lt-probe.json under --out (default $OUT or .).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCudaBackend, type CudaBackend } from '../src/backend/cuda/cuda-backend.js';
import type { CudaFp8Weight } from '../src/backend/cuda/cuda-fp8-weight.js';
import type { CudaTensor } from '../src/backend/cuda/cuda-tensor.js';
import { fp8Dequantize } from '../src/backend/cuda/fp8-ops.js';
import { median, relErr } from '../test/gpu/check-util.js';

const CUDA_R_16BF = 14;
const CUDA_R_32F = 0;
const CUDA_R_8F_E4M3 = 28;
const COMPUTE_32F = 68;
const [TRANSA, TRANSB, A_SCALE_POINTER, B_SCALE_POINTER, A_SCALE_MODE, B_SCALE_MODE] = [
  3, 4, 17, 18, 31, 32,
];
const SCALE_VEC128 = 4;
const SCALE_BLK128 = 5;
const PREF_MAX_WORKSPACE = 1;
const WS_BYTES = 64 << 20;
const RESULT_BYTES = 96; // cublasLtMatmulHeuristicResult_t: algo (64), workspaceSize, state, waves, 4 reserved

type WeightScales = 'blk128' | 'vec128';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

/** One cuBLASLt handle and workspace; each call builds its descriptors (a probe, not a hot path). */
class LtFp8 {
  private readonly h: unknown;
  private readonly ws: number;
  constructor(private readonly gpu: CudaBackend) {
    const lt = gpu.dev.libs.cublasLt;
    if (!lt.cublasLtCreate || !lt.cublasLtMatmul) throw new Error('cuBLASLt lacks cublasLtMatmul');
    const h: [unknown] = [null];
    this.ok(lt.cublasLtCreate(h) as number, 'cublasLtCreate');
    this.h = h[0];
    this.ws = gpu.dev.malloc(WS_BYTES, 'cuBLASLt workspace');
  }

  private ok(res: number, what: string): void {
    if (res !== 0) throw new Error(`${what}: cuBLAS status ${res}`);
  }

  private fn<T>(f: T | null, name: string): T {
    if (!f) throw new Error(`cuBLASLt lacks ${name}`);
    return f;
  }

  private make(create: (o: [unknown]) => number, what: string): unknown {
    const o: [unknown] = [null];
    this.ok(create(o), what);
    return o[0];
  }

  /** The matmul descriptor: w (A) op T with `mode` scales, x (B) with VEC128 scales. */
  private desc(wsc: number, xs: number, mode: WeightScales): unknown {
    const lt = this.gpu.dev.libs.cublasLt;
    const op = this.make(
      (o) => this.fn(lt.cublasLtMatmulDescCreate, 'desc')(o, COMPUTE_32F, CUDA_R_32F) as number,
      'cublasLtMatmulDescCreate',
    );
    const set = (attr: number, buf: Int32Array | BigUint64Array): void =>
      this.ok(
        this.fn(lt.cublasLtMatmulDescSetAttribute, 'setAttribute')(
          op,
          attr,
          buf,
          buf.byteLength,
        ) as number,
        `cublasLtMatmulDescSetAttribute(${attr})`,
      );
    set(TRANSA, new Int32Array([1]));
    set(TRANSB, new Int32Array([0]));
    set(A_SCALE_MODE, new Int32Array([mode === 'blk128' ? SCALE_BLK128 : SCALE_VEC128]));
    set(B_SCALE_MODE, new Int32Array([SCALE_VEC128]));
    set(A_SCALE_POINTER, new BigUint64Array([BigInt(wsc)]));
    set(B_SCALE_POINTER, new BigUint64Array([BigInt(xs)]));
    return op;
  }

  /** The heuristic's first algorithm (64 bytes), or why there is none. */
  private algo(op: unknown, Ad: unknown, Bd: unknown, Dd: unknown): Uint8Array | string {
    const lt = this.gpu.dev.libs.cublasLt;
    const pref = this.make(
      (o) => this.fn(lt.cublasLtMatmulPreferenceCreate, 'pref')(o) as number,
      'cublasLtMatmulPreferenceCreate',
    );
    this.ok(
      this.fn(lt.cublasLtMatmulPreferenceSetAttribute, 'pref attr')(
        pref,
        PREF_MAX_WORKSPACE,
        new BigUint64Array([BigInt(WS_BYTES)]),
        8,
      ) as number,
      'cublasLtMatmulPreferenceSetAttribute',
    );
    const results = new Uint8Array(RESULT_BYTES);
    const count = [0];
    const res = this.fn(lt.cublasLtMatmulAlgoGetHeuristic, 'heuristic')(
      this.h,
      op,
      Ad,
      Bd,
      Dd,
      Dd,
      pref,
      1,
      results,
      count,
    ) as number;
    if (res !== 0) return `cublasLtMatmulAlgoGetHeuristic status ${res}`;
    if (count[0] === 0) return 'no algorithm';
    return results.slice(0, 64);
  }

  /** The call as a closure (descriptors and algorithm chosen once), or why cuBLASLt declined. */
  prepare(
    p: { out: number; x8: number; xs: number; w8: number; wsc: number },
    M: number,
    N: number,
    K: number,
    mode: WeightScales,
  ): (() => void) | string {
    const lt = this.gpu.dev.libs.cublasLt;
    const layout = (type: number, rows: number, cols: number, ld: number): unknown =>
      this.make(
        (o) => this.fn(lt.cublasLtMatrixLayoutCreate, 'layout')(o, type, rows, cols, ld) as number,
        'cublasLtMatrixLayoutCreate',
      );
    // Column-major: out^T [N, M] = (w [N, K] as K x N, op T) . (x [M, K] as K x M).
    const op = this.desc(p.wsc, p.xs, mode);
    const Ad = layout(CUDA_R_8F_E4M3, K, N, K);
    const Bd = layout(CUDA_R_8F_E4M3, K, M, K);
    const Dd = layout(CUDA_R_16BF, N, M, N);
    const algo = this.algo(op, Ad, Bd, Dd);
    if (typeof algo === 'string') return algo;
    const alpha = new Float32Array([1]);
    const beta = new Float32Array([0]);
    const stream = this.gpu.dev.stream;
    const mm = this.fn(lt.cublasLtMatmul, 'matmul');
    return () =>
      this.ok(
        mm(
          this.h,
          op,
          alpha,
          p.w8,
          Ad,
          p.x8,
          Bd,
          beta,
          p.out,
          Dd,
          p.out,
          Dd,
          algo,
          this.ws,
          WS_BYTES,
          stream,
        ) as number,
        'cublasLtMatmul',
      );
  }
}

function timeMs(gpu: CudaBackend, f: () => void): number {
  f();
  const ms: number[] = [];
  for (let r = 0; r < 15; r++) {
    const a = gpu.dev.createEvent();
    const b = gpu.dev.createEvent();
    gpu.dev.record(a);
    f();
    gpu.dev.record(b);
    ms.push(gpu.dev.elapsed(a, b));
  }
  return median(ms);
}

/** Scales of an FP8 weight [R, K] (per row, 128 inputs) in cuBLASLt's layouts, uploaded. */
function ltScales(gpu: CudaBackend, w: CudaFp8Weight, mode: WeightScales | 'x'): CudaTensor {
  const [R, K] = w.shape as [number, number];
  const kb = K / 128;
  const s = gpu.readF32(w.scales);
  if (mode === 'blk128') {
    // [R/128, kb padded to 4], row-major: the scale of block (rb, k) at rb * kbp + k.
    const kbp = Math.ceil(kb / 4) * 4;
    const o = new Float32Array((R / 128) * kbp);
    for (let rb = 0; rb < R / 128; rb++)
      for (let k = 0; k < kb; k++) o[rb * kbp + k] = s[rb * 128 * kb + k]!;
    return gpu.upload(o, [o.length], 'f32') as CudaTensor;
  }
  // VEC128: outer dimension fastest, the scale of (row r, k) at k * R + r.
  const o = new Float32Array(R * kb);
  for (let r = 0; r < R; r++) for (let k = 0; k < kb; k++) o[k * R + r] = s[r * kb + k]!;
  return gpu.upload(o, [o.length], 'f32') as CudaTensor;
}

function probeShape(gpu: CudaBackend, lt: LtFp8, name: string, M: number, N: number, K: number) {
  const fill = (shape: number[], seed: number, scale: number): CudaTensor => {
    const t = gpu.alloc(shape, 'bf16') as CudaTensor;
    gpu.fillRandom(t, seed, scale);
    return t;
  };
  const x8 = gpu.fp8!.quantize(fill([M, K], 3, 1)) as CudaFp8Weight;
  const w8 = gpu.fp8!.quantize(fill([N, K], 7, 1 / Math.sqrt(K))) as CudaFp8Weight;
  const xb = gpu.alloc([M, K], 'bf16') as CudaTensor;
  const wb = gpu.alloc([N, K], 'bf16') as CudaTensor;
  fp8Dequantize(gpu.ctx, xb.ptr, 'b', x8);
  fp8Dequantize(gpu.ctx, wb.ptr, 'b', w8);
  const ref = gpu.alloc([M, N], 'bf16') as CudaTensor;
  const bf = () => gpu.gemm.gemm(ref.ptr, 'bf16', xb.ptr, wb.ptr, 'bf16', M, N, K);
  const flop = 2 * M * N * K;
  const r: Record<string, number | string> = { name, M, N, K };
  const msB = timeMs(gpu, bf);
  r['cublas bf16 ms'] = +msB.toFixed(4);
  r['cublas bf16 TFLOP/s'] = Math.round(flop / msB / 1e9);
  const refV = gpu.readF32(ref);
  const xs = ltScales(gpu, x8, 'x');
  for (const mode of ['blk128', 'vec128'] as const) {
    const wsc = ltScales(gpu, w8, mode);
    const out = gpu.alloc([M, N], 'bf16') as CudaTensor;
    try {
      const call = lt.prepare(
        { out: out.ptr, x8: x8.ptr, xs: xs.ptr, w8: w8.ptr, wsc: wsc.ptr },
        M,
        N,
        K,
        mode,
      );
      if (typeof call === 'string') r[`lt ${mode}`] = call;
      else {
        const ms = timeMs(gpu, call);
        r[`lt ${mode} ms`] = +ms.toFixed(4);
        r[`lt ${mode} TFLOP/s`] = Math.round(flop / ms / 1e9);
        r[`lt ${mode} rel err vs bf16`] = +relErr(gpu.readF32(out), refV).toExponential(2);
      }
    } catch (e) {
      r[`lt ${mode}`] = (e as Error).message;
    }
    gpu.free(out);
    gpu.free(wsc);
  }
  console.log(JSON.stringify(r));
  for (const t of [x8, w8, xb, wb, ref, xs]) gpu.free(t);
  return r;
}

async function main(): Promise<void> {
  const out = arg('out', process.env['OUT'] ?? '.');
  const gpu = await createCudaBackend({});
  const lt = new LtFp8(gpu);
  const shapes: [string, number, number, number][] = [
    ['dense gate|up', 2048, 24576, 6144],
    ['dense down', 2048, 6144, 12288],
    ['q_proj', 2048, 8192, 6144],
    ['o_proj', 2048, 6144, 8192],
    ['expert gate|up, 80 rows', 80, 6144, 6144],
    ['expert down, 80 rows', 80, 6144, 3072],
    ['dense gate|up 8192', 8192, 24576, 6144],
  ];
  const rows = shapes.map(([n, M, N, K]) => probeShape(gpu, lt, n, M, N, K));
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'fp8-lt-probe.json'), JSON.stringify(rows, null, 2));
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 2;
});
