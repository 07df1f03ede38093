import type { ArgsOf, KernelDecl, NameOf } from './kernel-decl.js';
import { ensureSmem, type OpContext } from './op-context.js';

export type Dim3 = readonly [number, number, number];

export interface LaunchShape<D extends KernelDecl> {
  readonly grid: Dim3;
  readonly block: Dim3;
  /** Dynamic shared memory in bytes (the limit is raised past 48 KiB as needed). */
  readonly smem?: number;
  /** Values of the declaration's -D macros (one compiled module per value set). */
  readonly defines?: Readonly<Record<D['defines'][number], string | number>>;
}

/**
 * The one way to launch a kernel: `name` must be one of the declaration's compiled names and
 * `args` name every declared argument (typed by the declaration), packed in declared order.
 */
export function launchKernel<D extends KernelDecl>(
  ctx: Pick<OpContext, 'dev' | 'kernels'>,
  k: D,
  name: NameOf<D>,
  shape: LaunchShape<D>,
  args: ArgsOf<D>,
): void {
  const fn = ctx.kernels.fn(k.file, name, shape.defines ?? {});
  const smem = shape.smem ?? 0;
  ensureSmem(ctx, fn, smem);
  const a = args as Readonly<Record<string, number>>;
  const values = k.argNames.map((n) => a[n]!);
  if (k.overlapsPrevious)
    ctx.dev.launchOverlapped(fn, shape.grid, shape.block, smem, k.sig, ...values);
  else ctx.dev.launch(fn, shape.grid, shape.block, smem, k.sig, ...values);
}
