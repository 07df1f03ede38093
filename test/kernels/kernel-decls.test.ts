import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { KernelDecl } from '../../src/backend/cuda/kernel-decl.js';
import * as TABLE from '../../src/backend/cuda/kernel-table.js';
import { closingBrace, cuKernels, cuSource, type CuKernel } from './cu-signatures.js';

// The typed kernel boundary, checked at build time without a GPU: every declaration in
// kernel-table.ts names kernels that exist in its .cu file with the same parameters (names,
// order, C types), every extern "C" kernel is declared, and no launch site bypasses it.
const CUDA_DIR = fileURLToPath(new URL('../../src/backend/cuda/', import.meta.url));
const KERNEL_DIR = `${CUDA_DIR}kernels`;
const DECLS: [string, KernelDecl][] = Object.entries(TABLE as Record<string, unknown>).filter(
  (e): e is [string, KernelDecl] => typeof e[1] === 'object' && e[1] !== null && 'sig' in e[1],
);
const FILES = readdirSync(KERNEL_DIR)
  .filter((f) => f.endsWith('.cu'))
  .map((f) => f.slice(0, -3));
const SOURCE = new Map<string, Map<string, CuKernel>>(
  FILES.map((f) => [f, new Map(cuKernels(KERNEL_DIR, f).map((k) => [k.name, k]))]),
);

const WAIT = /\bgrid_dep_wait\s*\(/;
const WAITING = new Map<string, ReadonlySet<string>>();

/** The device functions of `file` that reach grid_dep_wait, directly or through each other. */
function waitingFunctions(file: string): ReadonlySet<string> {
  const known = WAITING.get(file);
  if (known) return known;
  const text = cuSource(KERNEL_DIR, file);
  const fns = new Map<string, string>();
  for (const m of text.matchAll(/__device__[^;{}]*?\b(\w+)\s*\([^;{}]*\)\s*\{/g)) {
    const open = m.index + m[0].length - 1;
    fns.set(m[1]!, text.slice(open, closingBrace(text, open)));
  }
  const waiting = new Set<string>();
  for (let grew = true; grew;) {
    grew = false;
    for (const [n, b] of fns)
      if (!waiting.has(n) && calls(b, waiting)) {
        waiting.add(n);
        grew = true;
      }
  }
  WAITING.set(file, waiting);
  return waiting;
}

function calls(body: string, waiting: ReadonlySet<string>): boolean {
  return WAIT.test(body) || [...waiting].some((n) => new RegExp(`\\b${n}\\s*[<(]`).test(body));
}

/**
 * Whether a kernel of `file` reaches griddepcontrol.wait: its body calls grid_dep_wait,
 * directly or through device functions of the file that do.
 */
function waitsForPrevious(file: string, kernel: CuKernel): boolean {
  return calls(kernel.body, waitingFunctions(file));
}

describe('kernel declarations against the .cu sources', () => {
  it('reads the macro-made kernels of every file', () => {
    expect(FILES.length).toBeGreaterThan(0);
    for (const f of FILES) expect(SOURCE.get(f)!.size, f).toBeGreaterThan(0);
    // FOR_3TYPES(ADD) in elementwise.cu: 8 type variants, parameters substituted.
    expect(SOURCE.get('elementwise')!.get('add_bfb')?.params).toEqual([
      ['out', 'ptr'],
      ['a', 'ptr'],
      ['b', 'ptr'],
      ['n', 'i64'],
    ]);
  });

  it.each(DECLS)('%s matches its kernels argument for argument', (_, d) => {
    const kernels = SOURCE.get(d.file);
    expect(kernels, `kernels/${d.file}.cu`).toBeDefined();
    const want = Object.entries(d.args);
    for (const name of d.names) {
      const k = kernels!.get(name);
      expect(k, `${name} is not an extern "C" kernel of kernels/${d.file}.cu`).toBeDefined();
      expect(k!.params, `${name}'s parameters`).toEqual(want);
    }
    expect(d.sig).toHaveLength(want.length);
  });

  // Programmatic dependent launch: a kernel launched to overlap the previous one must wait for
  // it before touching what it writes, or it races with it (kernel-decl.ts overlapsPrevious).
  it.each(DECLS.filter(([, d]) => d.overlapsPrevious))(
    '%s, launched to overlap the previous kernel, waits for it',
    (_, d) => {
      for (const name of d.names)
        expect(waitsForPrevious(d.file, SOURCE.get(d.file)!.get(name)!), name).toBe(true);
    },
  );

  it('the wait check finds kernels that do not wait', () => {
    // skinny_split_x only lets the GEMM after it start early, and the norms neither wait nor
    // let go: both are launched plainly. The GEMV waits after its weight prefetch.
    expect(waitsForPrevious('skinny-x', SOURCE.get('skinny-x')!.get('skinny_split_x')!)).toBe(
      false,
    );
    expect(waitsForPrevious('norm', SOURCE.get('norm')!.get('rmsnorm_warp_bbb')!)).toBe(false);
    expect(waitsForPrevious('fp8-gemv', SOURCE.get('fp8-gemv')!.get('fp8_gemv_b_4')!)).toBe(true);
  });

  it('declares every kernel of every .cu file, once', () => {
    const declared = DECLS.flatMap(([, d]) => d.names.map((n) => `${d.file}:${n}`));
    expect(new Set(declared).size).toBe(declared.length);
    const present = [...SOURCE].flatMap(([f, ks]) => [...ks.keys()].map((n) => `${f}:${n}`));
    expect(present.filter((k) => !declared.includes(k))).toEqual([]);
  });

  it('a changed parameter fails the check (the reader sees types, names and order)', () => {
    const src = SOURCE.get('skinny-x')!.get('skinny_split_x')!;
    expect(src.params).not.toEqual(Object.entries({ ...TABLE.SKINNY_SPLIT.args, rows: 'i64' }));
    expect(src.params.map(([n]) => n)).toEqual(['x', 'rows', 'K', 'xq', 'xs']);
  });

  it('launches go through launchKernel only (no string-typed launch sites)', () => {
    const offenders: string[] = [];
    for (const f of readdirSync(CUDA_DIR).filter((n) => n.endsWith('.ts'))) {
      if (f === 'kernel-launch.ts' || f === 'device.ts' || f.endsWith('.test.ts')) continue;
      const text = readFileSync(`${CUDA_DIR}${f}`, 'utf8');
      if (/\bdev\.launch\(|kernels\.fn\(/.test(text)) offenders.push(f);
    }
    expect(offenders).toEqual([]);
  });
});
