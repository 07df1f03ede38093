/**
 * The typed kernel boundary: one `KernelDecl` per kernel family says which `.cu` file holds
 * it, every name it is compiled under (type-letter variants), its arguments in order with
 * their C types, and its launch shape. `launchKernel` (kernel-launch.ts) takes a declaration
 * and named arguments, so a launch site can neither misspell a kernel nor pass arguments in
 * the wrong order or kind; test/kernels/kernel-decls.test.ts parses the `.cu` sources
 * (macro-made names included) and fails unless every declaration matches its kernel there,
 * argument for argument, and every kernel there is declared.
 */

/** C argument types: pointer (CUdeviceptr), int, long long, unsigned, float, double. */
export type ArgType = 'ptr' | 'i32' | 'i64' | 'u32' | 'f32' | 'f64';

/** Argument name -> type, in the kernel's parameter order (object keys keep their order). */
export type ArgSpec = Readonly<Record<string, ArgType>>;

export interface KernelDecl<N extends string = string, A extends ArgSpec = ArgSpec> {
  /** kernels/<file>.cu */
  readonly file: string;
  /** Every compiled name (extern "C"), e.g. the embedding_<out><table> type variants. */
  readonly names: readonly N[];
  readonly args: A;
  /** Grid and block, as the `.cu` header states them. */
  readonly launch: string;
  /** -D macros the file is compiled with for this kernel (a separate module per value set). */
  readonly defines: readonly string[];
  /**
   * Launched to overlap the previous kernel in the stream (programmatic dependent launch): every
   * thread of the kernel waits for it (`grid_dep_wait`, griddepcontrol.wait) before reading
   * anything a previous kernel may have written, writing anything or returning, so the grid
   * never finishes before its predecessor. test/kernels/kernel-decls.test.ts checks the wait.
   */
  readonly overlapsPrevious: boolean;
  /** One letter per argument for CudaDevice.launch, derived from `args`. */
  readonly sig: string;
  /** The argument names in order, derived from `args`. */
  readonly argNames: readonly string[];
}

export type NameOf<D extends KernelDecl> = D['names'][number];
export type ArgsOf<D extends KernelDecl> = { readonly [K in keyof D['args']]: number };

const LETTER: Readonly<Record<ArgType, string>> = {
  ptr: 'p',
  i32: 'i',
  i64: 'l',
  u32: 'u',
  f32: 'f',
  f64: 'd',
};

export function kernel<const N extends string, const A extends ArgSpec>(d: {
  file: string;
  names: readonly N[];
  args: A;
  launch: string;
  defines?: readonly string[];
  overlapsPrevious?: boolean;
}): KernelDecl<N, A> {
  const sig = Object.values(d.args)
    .map((t) => LETTER[t])
    .join('');
  return Object.freeze({
    ...d,
    defines: d.defines ?? [],
    overlapsPrevious: d.overlapsPrevious ?? false,
    sig,
    argNames: Object.keys(d.args),
  });
}

/** `prefix` + each suffix, typed as the union of the names. */
export function variants<const P extends string, const S extends string>(
  prefix: P,
  suffixes: readonly S[],
): `${P}${S}`[] {
  return suffixes.map((s) => `${prefix}${s}` as `${P}${S}`);
}

/** Type letters: b = bf16, f = f32 (cuda-tensor.ts `letter`). */
export type TypeLetter = 'b' | 'f';
const L: readonly TypeLetter[] = ['b', 'f'];
/** common.cuh's FOR_2TYPES and FOR_3TYPES suffixes. */
export const TWO_TYPES = L.flatMap((a) => L.map((b) => `${a}${b}` as `${TypeLetter}${TypeLetter}`));
export const THREE_TYPES = TWO_TYPES.flatMap((ab) =>
  L.map((c) => `${ab}${c}` as `${TypeLetter}${TypeLetter}${TypeLetter}`),
);
