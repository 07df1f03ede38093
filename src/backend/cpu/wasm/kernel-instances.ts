import {
  ATTENTION_FMA_WASM_BASE64,
  ATTENTION_KV16_FMA_WASM_BASE64,
  ATTENTION_KV16_WASM_BASE64,
  ATTENTION_WASM_BASE64,
  BF16_ROWS_WASM_BASE64,
  MATMUL_BF16_WASM_BASE64,
  MATMUL_PACKED_BF16_FMA_WASM_BASE64,
  MATMUL_PACKED_BF16_WASM_BASE64,
  MATMUL_PACKED_FMA_WASM_BASE64,
  MATMUL_PACKED_WASM_BASE64,
  MATMUL_WASM_BASE64,
  ROWOPS_WASM_BASE64,
} from './kernels-wasm.js';
import { wasm } from './wasm-api.js';

// prettier-ignore
/** The kernel exports a pool job may call, by index (thread-pool.ts sends the index). */
export const KERNEL_EXPORTS = ['matmul', 'matmul_bf16', 'matmul_packed', 'matmul_packed_bf16', 'attention', 'msa_select',
  'msa_scores', 'msa_pick', 'rms_norm', 'add_rms_norm', 'add', 'swiglu', 'gather_rows', 'scatter_add', 'scatter_rows',
  'norm_rope_cache', 'attention_kv16', 'msa_scores_kv16', 'msa_select_kv16', 'round_bf16_rows'] as const;
export type KernelName = (typeof KERNEL_EXPORTS)[number];

/** KERNEL_EXPORTS' indices by name: what a pool job's rows hold (JobRows.add). */
export const KERNEL = Object.fromEntries(KERNEL_EXPORTS.map((n, i) => [n, i])) as Record<
  KernelName,
  number
>;

/** One instance set of the kernel modules over a heap, for the calling thread. */
export interface KernelInstances {
  /** The compiled modules (the pool's workers instantiate the same ones). */
  readonly modules: readonly object[];
  /** KERNEL_EXPORTS' functions, in that order. */
  readonly fns: readonly ((...a: number[]) => void)[];
  /** rowops.wat's memset. */
  readonly zero: (p: number, bytes: number) => void;
}

/** Compiled once per process: every CpuKernels instantiates the same modules. */
const compiled = new Map<string, object>();

function compile(b64: string): object {
  let mod = compiled.get(b64);
  if (!mod) {
    mod = new wasm.Module(Buffer.from(b64, 'base64'));
    compiled.set(b64, mod);
  }
  return mod;
}

/** The kernel modules (with fused multiply-add where `fma`) instantiated over `memory`. */
export function instantiateKernels(memory: object, fma: boolean): KernelInstances {
  const modules = [
    MATMUL_WASM_BASE64,
    MATMUL_BF16_WASM_BASE64,
    fma ? MATMUL_PACKED_FMA_WASM_BASE64 : MATMUL_PACKED_WASM_BASE64,
    fma ? MATMUL_PACKED_BF16_FMA_WASM_BASE64 : MATMUL_PACKED_BF16_WASM_BASE64,
    fma ? ATTENTION_FMA_WASM_BASE64 : ATTENTION_WASM_BASE64,
    fma ? ATTENTION_KV16_FMA_WASM_BASE64 : ATTENTION_KV16_WASM_BASE64,
    ROWOPS_WASM_BASE64,
    BF16_ROWS_WASM_BASE64,
  ].map(compile);
  const exports: Record<string, unknown> = {};
  for (const m of modules)
    Object.assign(exports, new wasm.Instance(m, { env: { memory } }).exports);
  return {
    modules,
    fns: KERNEL_EXPORTS.map((n) => exports[n] as (...a: number[]) => void),
    zero: exports['zero'] as (p: number, bytes: number) => void,
  };
}
