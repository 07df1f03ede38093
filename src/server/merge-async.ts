/**
 * Interleaves several async iterables in arrival order, tagging each value with the index of
 * its source (the `n` choices of one request run as separate engine requests). Leaving early
 * closes every source still open.
 */
export async function* mergeAsync<T>(
  sources: readonly AsyncIterable<T>[],
): AsyncGenerator<{ index: number; value: T }> {
  const iters = sources.map((s) => s[Symbol.asyncIterator]());
  type Step = { index: number; result: IteratorResult<T> };
  const pending = new Map<number, Promise<Step>>();
  const pull = (index: number) => {
    const it = iters[index]!;
    const step = it.next().then((result) => ({ index, result }));
    // Marks a late rejection of an abandoned source as handled; race() still sees it.
    step.catch(() => undefined);
    pending.set(index, step);
  };
  iters.forEach((_it, i) => pull(i));
  try {
    while (pending.size > 0) {
      const { index, result } = await Promise.race(pending.values());
      if (result.done) {
        pending.delete(index);
        continue;
      }
      pull(index);
      yield { index, value: result.value };
    }
  } finally {
    // Sources still open were abandoned; return() lets each run its cleanup (engine abort). Not
    // awaited: a generator parked on the engine only sees it after its pending next() settles.
    for (const i of pending.keys()) void iters[i]!.return?.()?.catch(() => undefined);
  }
}
