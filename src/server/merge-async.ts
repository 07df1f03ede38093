/**
 * Interleaves several async iterables in arrival order, tagging each value with the index of
 * its source (the `n` choices of one request run as separate engine requests). Each source
 * has at most one `next()` outstanding; a settled one goes on a ready queue, so an event costs
 * O(1) however many sources there are (racing every pending promise would cost O(sources) per
 * event and retain a reaction per source on each). Leaving early closes every source still open.
 */
export async function* mergeAsync<T>(
  sources: readonly AsyncIterable<T>[],
): AsyncGenerator<{ index: number; value: T }> {
  const iters = sources.map((s) => s[Symbol.asyncIterator]());
  type Step = { index: number; result: IteratorResult<T> } | { index: number; error: unknown };
  const ready: Step[] = [];
  let head = 0;
  let wake: (() => void) | null = null;
  const open = new Set<number>();
  const settle = (step: Step) => {
    ready.push(step);
    const w = wake;
    wake = null;
    w?.();
  };
  const pull = (index: number) => {
    iters[index]!.next().then(
      (result) => settle({ index, result }),
      (error: unknown) => settle({ index, error }),
    );
  };
  iters.forEach((_it, i) => {
    open.add(i);
    pull(i);
  });
  try {
    while (open.size > 0) {
      if (head === ready.length) {
        ready.length = 0;
        head = 0;
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      const step = ready[head]!;
      ready[head++] = undefined as unknown as Step;
      if ('error' in step) {
        open.delete(step.index);
        throw step.error;
      }
      if (step.result.done) {
        open.delete(step.index);
        continue;
      }
      pull(step.index);
      yield { index: step.index, value: step.result.value };
    }
  } finally {
    // Sources still open were abandoned; return() lets each run its cleanup (engine abort). Not
    // awaited: a generator parked on the engine only sees it after its pending next() settles.
    for (const i of open) void iters[i]!.return?.()?.catch(() => undefined);
  }
}
