/** Shape helpers. Shapes are plain readonly number arrays, row-major. */
export type Shape = readonly number[];

export function numel(shape: Shape): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export function sameShape(a: Shape, b: Shape): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

export function shapeStr(shape: Shape): string {
  return `[${shape.join(', ')}]`;
}
