/**
 * Compiles the `.cu` files under kernels/ with NVRTC for the device's architecture (cubin,
 * e.g. sm_90) on first use, and caches the cubin on disk under a hash of the source, the
 * shared headers, the options, the architecture and the NVRTC version:
 *   $MOESERVE_KERNEL_CACHE or ~/.cache/moeserve/kernels/<file>-<hash>.cubin
 * Compile errors carry NVRTC's error name and its full log.
 */
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CudaError } from './check.js';
import type { CudaDevice, KernelFn } from './device.js';
import type { NvrtcApi } from './ffi.js';
import { readEnv } from '../../config/env.js';

const HEADER_EXT = '.cuh';

/** The kernels folder: MOESERVE_KERNEL_DIR, else the first `src/backend/cuda/kernels` above this module. */
export function findKernelDir(): string {
  const override = readEnv().kernelDir;
  if (override) return override;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    for (const cand of [join(dir, 'kernels'), join(dir, 'src/backend/cuda/kernels')]) {
      if (existsSync(join(cand, 'common.cuh'))) return cand;
    }
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  throw new Error(
    'cuda: kernel sources (src/backend/cuda/kernels) not found; set MOESERVE_KERNEL_DIR',
  );
}

export function kernelCacheDir(): string {
  return readEnv().kernelCache ?? join(homedir(), '.cache', 'moeserve', 'kernels');
}

export interface CompileStats {
  compiled: number;
  cached: number;
  compileMs: number;
}

/** The defines of a launch that has none (one object: defineFlags keeps its flags once). */
const NO_DEFINES: Readonly<Record<string, string | number>> = {};

export class KernelCache {
  private readonly modules = new Map<string, unknown>();
  private readonly functions = new Map<string, KernelFn>();
  private readonly headers: { names: string[]; sources: string[] };
  private readonly arch: string;
  readonly nvrtcVersion: string;
  readonly stats: CompileStats = { compiled: 0, cached: 0, compileMs: 0 };

  constructor(
    private readonly dev: CudaDevice,
    private readonly dir = findKernelDir(),
    private readonly cacheDir = kernelCacheDir(),
    /**
     * Told when an NVRTC compile starts (true) and ends (false): it blocks the thread for
     * seconds, which a rank's hang watchdog must not take for a hang.
     */
    private readonly onCompile?: (compiling: boolean) => void,
  ) {
    const names = readdirSync(dir)
      .filter((f) => f.endsWith(HEADER_EXT))
      .sort();
    this.headers = { names, sources: names.map((n) => readFileSync(join(dir, n), 'utf8')) };
    this.arch = dev.arch;
    const maj = [0];
    const min = [0];
    dev.check.nvrtc(dev.libs.nvrtc.nvrtcVersion(maj, min), 'nvrtcVersion');
    this.nvrtcVersion = `${maj[0]}.${min[0]}`;
  }

  /**
   * `defines` as sorted -DKEY=VALUE flags, kept per defines object: a launcher that passes the
   * same object every launch (fp8-gemv.ts's tunes) pays for the sort once.
   */
  private defineFlags(defines: Readonly<Record<string, string | number>>): string[] {
    let f = this.flagsOf.get(defines);
    if (!f) {
      f = Object.entries(defines)
        .map(([k, v]) => `-D${k}=${v}`)
        .sort();
      this.flagsOf.set(defines, f);
    }
    return f;
  }
  private readonly flagsOf = new WeakMap<object, string[]>();

  /** The kernel `name` from `kernels/<file>.cu`, compiled with `defines` (-DKEY=VALUE). */
  fn(
    file: string,
    name: string,
    defines: Readonly<Record<string, string | number>> = NO_DEFINES,
  ): KernelFn {
    const defs = this.defineFlags(defines);
    const key = `${file}:${defs.join(' ')}:${name}`;
    const hit = this.functions.get(key);
    if (hit) return hit;
    const mod = this.module(file, defs);
    const out: [unknown] = [null];
    this.dev.check.cu(
      this.dev.libs.cu.cuModuleGetFunction(out, mod, name),
      `cuModuleGetFunction(${file}.cu: ${name})`,
    );
    const fn: KernelFn = { name, handle: out[0] };
    this.functions.set(key, fn);
    return fn;
  }

  private module(file: string, defs: string[]): unknown {
    const key = `${file}:${defs.join(' ')}`;
    const hit = this.modules.get(key);
    if (hit) return hit;
    const cubin = this.cubin(file, defs);
    const out: [unknown] = [null];
    this.dev.check.cu(
      this.dev.libs.cu.cuModuleLoadData(out, cubin),
      `cuModuleLoadData(${file}.cu ${defs.join(' ')})`,
    );
    this.modules.set(key, out[0]);
    return out[0];
  }

  private cubin(file: string, defs: string[]): Buffer {
    const source = readFileSync(join(this.dir, `${file}.cu`), 'utf8');
    const options = [...compileOptions(this.arch, file), ...defs];
    const path = join(
      this.cacheDir,
      cubinName(file, source, this.headers, options, this.nvrtcVersion),
    );
    if (existsSync(path)) {
      this.stats.cached++;
      return readFileSync(path);
    }
    const t0 = performance.now();
    this.onCompile?.(true);
    let bin: Buffer;
    try {
      bin = nvrtcCompile(this.dev.libs.nvrtc, `${file}.cu`, source, this.headers, options).cubin;
    } finally {
      this.onCompile?.(false);
    }
    this.stats.compileMs += performance.now() - t0;
    this.stats.compiled++;
    try {
      mkdirSync(this.cacheDir, { recursive: true });
      const tmp = `${path}.${process.pid}.tmp`;
      writeFileSync(tmp, bin);
      renameSync(tmp, path);
    } catch {
      // An unwritable cache only costs a recompile next time.
    }
    return bin;
  }
}

/**
 * Kernel files that use instructions of one architecture only (wgmma: sm_90a), compiled for
 * that architecture-specific target; their launchers take them only on that architecture.
 */
const ARCH_SPECIFIC: Readonly<Record<string, string>> = {
  'attention-prefill-wg': 'sm_90',
  'fp8-wgmma': 'sm_90',
};

/** NVRTC options for an architecture and kernel file (shared with the offline precompile). */
export function compileOptions(arch: string, file = ''): string[] {
  const target = ARCH_SPECIFIC[file] === arch ? `${arch}a` : arch;
  return [`-arch=${target}`, '-std=c++17', '-default-device', '-lineinfo'];
}

/** Cache file name: a hash of the source, headers, options (arch and defines) and NVRTC version. */
export function cubinName(
  file: string,
  source: string,
  headers: { names: string[]; sources: string[] },
  options: string[],
  nvrtcVersion: string,
): string {
  const h = createHash('sha256');
  for (const part of [source, ...headers.names, ...headers.sources, ...options, nvrtcVersion])
    h.update(part).update('\0');
  return `${file}-${h.digest('hex').slice(0, 20)}.cubin`;
}

/**
 * Compiles one source with NVRTC. Throws with NVRTC's error name and the full log; returns
 * the cubin and the log (warnings, ptxas output when asked for).
 */
export function nvrtcCompile(
  nvrtc: NvrtcApi,
  name: string,
  source: string,
  headers: { names: string[]; sources: string[] },
  options: string[],
): { cubin: Buffer; log: string } {
  const prog: [unknown] = [null];
  const fail = (res: number, what: string, log = ''): never => {
    const err = (nvrtc.nvrtcGetErrorString(res) as string | null) ?? `nvrtcResult ${res}`;
    throw new CudaError(`${what}: ${err}${log ? `\n${log}` : ''}`, 'nvrtc', res);
  };
  let res = nvrtc.nvrtcCreateProgram(
    prog,
    source,
    name,
    headers.names.length,
    headers.sources,
    headers.names,
  ) as number;
  if (res !== 0) fail(res, `nvrtcCreateProgram(${name})`);
  try {
    res = nvrtc.nvrtcCompileProgram(prog[0], options.length, options) as number;
    const log = programLog(nvrtc, prog[0]);
    if (res !== 0) fail(res, `nvrtcCompileProgram(${name}, ${options.join(' ')})`, log);
    const size = [0];
    res = nvrtc.nvrtcGetCUBINSize(prog[0], size) as number;
    if (res !== 0) fail(res, 'nvrtcGetCUBINSize');
    const cubin = Buffer.alloc(Number(size[0]));
    res = nvrtc.nvrtcGetCUBIN(prog[0], cubin) as number;
    if (res !== 0) fail(res, 'nvrtcGetCUBIN');
    return { cubin, log };
  } finally {
    nvrtc.nvrtcDestroyProgram(prog);
  }
}

function programLog(nvrtc: NvrtcApi, prog: unknown): string {
  const n = [0];
  if (nvrtc.nvrtcGetProgramLogSize(prog, n) !== 0 || Number(n[0]) <= 1) return '';
  const buf = Buffer.alloc(Number(n[0]));
  nvrtc.nvrtcGetProgramLog(prog, buf);
  return buf.toString('utf8').replace(/\0+$/, '').trim();
}
