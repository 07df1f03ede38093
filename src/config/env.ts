/**
 * Every environment variable moeserve reads, read here and nowhere else (eslint forbids
 * `process.env` in src/ outside this file). Each call reads the environment afresh, so a
 * test may set a variable for a child process; nothing is cached in module state. README's
 * "Environment variables" table lists the same names.
 */
export type LibraryFile = 'cuda' | 'nvrtc' | 'cublas' | 'cublasLt' | 'nccl';

export interface MoeserveEnv {
  /** MOESERVE_KERNEL_DIR: the `.cu` sources (default: found above the module). */
  readonly kernelDir: string | undefined;
  /** MOESERVE_KERNEL_CACHE: compiled-kernel cache folder (default ~/.cache/moeserve/kernels). */
  readonly kernelCache: string | undefined;
  /** MOESERVE_CUDA_INCLUDE: the toolkit's include folder (cuda_bf16.h). */
  readonly cudaInclude: string | undefined;
  /** MOESERVE_CUDA_LIB_DIR: library folders, ':'-separated, searched first. */
  readonly cudaLibDirs: readonly string[];
  /** MOESERVE_LIB{CUDA,NVRTC,CUBLAS,CUBLASLT,NCCL}: a library's full path. */
  readonly libraryFile: Readonly<Record<LibraryFile, string | undefined>>;
  /** MOESERVE_CUDA_SKINNY=0 turns the small-M tensor-core GEMM path off (default on). */
  readonly cudaSkinny: boolean;
  /** MOESERVE_MOE_GROUPED=1: MoE prefill GEMMs as two grouped cuBLAS calls (default: one per expert). */
  readonly moeGrouped: boolean;
  /** MOESERVE_DEBUG: print stack traces on CLI errors. */
  readonly debug: boolean;
  /** MOESERVE_FAULT_INJECT="rank=R,step=S[,mode=throw|block]": rank-failure tests only. */
  readonly faultInject: string | undefined;
  /** MOESERVE_HANG_WATCHDOG_S: seconds a blocked rank waits on a lost peer (default 10). */
  readonly hangWatchdogSeconds: number | undefined;
  /** MOESERVE_GEMM_RS_MIN_ROWS: rows from which the IPC GEMM + reduce-scatter runs (default the measured 1024; 1e12 = off). */
  readonly gemmRsMinRows: number | undefined;
  /** MOESERVE_CPU_MHZ: the clock bench:cpu uses for peaks instead of measuring it. */
  readonly cpuMhz: number | undefined;
  /**
   * MOESERVE_MODEL_THREAD=1 / 0: `serve --backend cpu` runs the model on its own thread, or on
   * the main thread; unset: its own thread when a core is left beside the --cpu-threads ones.
   */
  readonly modelThread: boolean | undefined;
  /** CUDA_HOME, CUDA_PATH: toolkit roots, in that order. */
  readonly cudaRoots: readonly string[];
  /** CUDA_VISIBLE_DEVICES: the GPUs this host's ranks are spread over. */
  readonly cudaVisibleDevices: string | undefined;
  /** HOME (default /root): for ~/.local python wheels. */
  readonly home: string;
  /** MOESERVE_API_KEY: the server's API key (vLLM: VLLM_API_KEY); set but empty is an error. */
  readonly apiKey: string | undefined;
}

const LIB_VARS: Readonly<Record<LibraryFile, string>> = {
  cuda: 'MOESERVE_LIBCUDA',
  nvrtc: 'MOESERVE_LIBNVRTC',
  cublas: 'MOESERVE_LIBCUBLAS',
  cublasLt: 'MOESERVE_LIBCUBLASLT',
  nccl: 'MOESERVE_LIBNCCL',
};

/** A three-way switch: '1' on, '0' off, anything else unset (the caller decides). */
const ON_OFF: Readonly<Record<string, boolean>> = { '1': true, '0': false };

/** The variables as moeserve understands them; an empty string counts as unset. */
export function readEnv(
  env: Readonly<Record<string, string | undefined>> = process.env,
): MoeserveEnv {
  const str = (name: string): string | undefined => (env[name] ? env[name] : undefined);
  const positive = (name: string): number | undefined => {
    const n = Number(env[name]);
    return env[name] && Number.isFinite(n) && n > 0 ? n : undefined;
  };
  const libraryFile = Object.fromEntries(
    Object.entries(LIB_VARS).map(([lib, name]) => [lib, str(name)]),
  ) as Record<LibraryFile, string | undefined>;
  return {
    kernelDir: str('MOESERVE_KERNEL_DIR'),
    kernelCache: str('MOESERVE_KERNEL_CACHE'),
    cudaInclude: str('MOESERVE_CUDA_INCLUDE'),
    cudaLibDirs: (env['MOESERVE_CUDA_LIB_DIR'] ?? '').split(':').filter((d) => d.length > 0),
    libraryFile,
    cudaSkinny: env['MOESERVE_CUDA_SKINNY'] !== '0',
    moeGrouped: env['MOESERVE_MOE_GROUPED'] === '1',
    debug: Boolean(env['MOESERVE_DEBUG']),
    faultInject: str('MOESERVE_FAULT_INJECT'),
    hangWatchdogSeconds: positive('MOESERVE_HANG_WATCHDOG_S'),
    gemmRsMinRows: positive('MOESERVE_GEMM_RS_MIN_ROWS'),
    cpuMhz: positive('MOESERVE_CPU_MHZ'),
    modelThread: ON_OFF[env['MOESERVE_MODEL_THREAD'] ?? ''],
    cudaRoots: [str('CUDA_HOME'), str('CUDA_PATH')].filter((d): d is string => d !== undefined),
    cudaVisibleDevices: str('CUDA_VISIBLE_DEVICES'),
    home: str('HOME') ?? '/root',
    apiKey: env['MOESERVE_API_KEY'],
  };
}

/** The environment of a child process: this one's plus `extra`. */
export function childEnv(extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) out[k] = v;
  return { ...out, ...extra };
}
