import { spawnSync } from 'node:child_process';
import { childEnv } from '../../config/env.js';

export interface BlasRow {
  readonly shape: string;
  readonly threads: number;
  readonly ms: number;
  readonly gflops: number;
}

export interface BlasResult {
  readonly rows: BlasRow[];
  /** What ran (numpy version, BLAS name), or why nothing did. */
  readonly note: string;
}

// float32 out = x · wᵀ through numpy (OpenBLAS) on `threads` threads, median of 7 after a
// warm-up call, the same shapes as the WASM kernel.
const SCRIPT = String.raw`
import json, sys, time
shapes, threads = json.loads(sys.argv[1]), int(sys.argv[2])
import numpy as np
info = np.__version__
try:
    info += ' ' + np.show_config(mode='dicts')['Build Dependencies']['blas']['name']
except Exception:
    pass
rows = []
for M, N, K in shapes:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((M, K), dtype=np.float32)
    w = rng.standard_normal((N, K), dtype=np.float32)
    out = np.empty((M, N), dtype=np.float32)
    np.matmul(x, w.T, out=out)
    ts = []
    for _ in range(7):
        t0 = time.perf_counter(); np.matmul(x, w.T, out=out); ts.append(time.perf_counter() - t0)
    ms = sorted(ts)[3] * 1e3
    rows.append({'shape': f'{M}x{N}x{K}', 'threads': threads, 'ms': ms, 'gflops': 2*M*N*K/(ms*1e6)})
print(json.dumps({'rows': rows, 'note': 'numpy ' + info}))
`;

/**
 * The reference GEMM: numpy's matmul (OpenBLAS in the pip wheels) through python3 when it
 * has numpy. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (set on some machines for old OpenBLAS
 * builds, and slowing a current one) are removed for this subprocess only; OMP/OPENBLAS
 * thread counts are set to `threads`.
 */
export function blasReference(shapes: readonly (readonly number[])[], threads: number): BlasResult {
  const env = childEnv();
  delete env['OPENBLAS_CORETYPE'];
  delete env['OPENBLAS_L2_SIZE'];
  env['OPENBLAS_NUM_THREADS'] = String(threads);
  env['OMP_NUM_THREADS'] = String(threads);
  const r = spawnSync('python3', ['-c', SCRIPT, JSON.stringify(shapes), String(threads)], {
    env,
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (r.error) return { rows: [], note: `skipped: python3 not runnable (${r.error.message})` };
  if (r.status !== 0) {
    const why = /ModuleNotFoundError: No module named 'numpy'/.test(r.stderr)
      ? 'python3 has no numpy'
      : (r.stderr.trim().split('\n').pop() ?? `exit ${r.status}`);
    return { rows: [], note: `skipped: ${why}` };
  }
  return JSON.parse(r.stdout) as BlasResult;
}
