/**
 * An unbounded single-consumer queue read with `for await`. The producer (the step loop)
 * never waits on the consumer; iteration ends after `close` once the queue is drained.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private head = 0;
  private waiter: ((r: IteratorResult<T, undefined>) => void) | null = null;
  private closed = false;

  /** `onPull` runs each time the consumer takes an item (the producer may resume). */
  constructor(private readonly onPull?: () => void) {}

  get isClosed(): boolean {
    return this.closed;
  }

  /** Items pushed and not yet taken. */
  get size(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    if (this.closed) throw new Error('AsyncQueue: push after close');
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w({ value: item, done: false });
    } else {
      this.items.push(item);
    }
  }

  close(): void {
    this.closed = true;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w({ value: undefined, done: true });
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<T, undefined> {
    return {
      next: () => {
        if (this.head < this.items.length) {
          const value = this.items[this.head]!;
          this.items[this.head++] = undefined as T; // drop the reference for the GC
          if (this.head === this.items.length) {
            this.items.length = 0;
            this.head = 0;
          }
          this.onPull?.();
          return Promise.resolve({ value, done: false });
        }
        if (this.closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => (this.waiter = resolve));
      },
    };
  }
}
