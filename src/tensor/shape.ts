/** Shape helpers. Shapes are plain readonly number arrays, row-major. */
export type Shape = readonly number[];

export function numel(shape: Shape): number {
  let n = 1;
  // indexed: for-of allocated an iterator where V8 did not optimise the caller (every tensor)
  for (let i = 0; i < shape.length; i++) n *= shape[i]!;
  return n;
}

export function sameShape(a: Shape, b: Shape): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

export function shapeStr(shape: Shape): string {
  return `[${shape.join(', ')}]`;
}
