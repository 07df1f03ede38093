const NIL = -1;

/**
 * Reference-counted KV pages with a free list kept in LRU order.
 *
 * A page is either used (refCount > 0, held by one or more running sequences) or free
 * (refCount 0, on the free list). A free page may still carry a prefix-cache label: it keeps
 * its KV until `allocate` hands it out again, at which point reuse listeners are told so the
 * label is dropped. Freed pages go to the tail and allocation takes from the head, so the page
 * reused first is the one released longest ago (LRU eviction of cached pages for free).
 */
export class PageAllocator {
  readonly numPages: number;
  private readonly refCounts: Int32Array;
  // Doubly linked free list over page ids; NIL ends it. O(1) removal from the middle lets a
  // prefix-cache hit take a cached page back from the free list.
  private readonly prev: Int32Array;
  private readonly next: Int32Array;
  private head = NIL;
  private tail = NIL;
  private free = 0;
  private readonly reuseListeners: ((page: number) => void)[] = [];

  constructor(numPages: number) {
    if (!Number.isInteger(numPages) || numPages < 1) {
      throw new Error(`PageAllocator: numPages must be a positive integer, got ${numPages}`);
    }
    this.numPages = numPages;
    this.refCounts = new Int32Array(numPages);
    this.prev = new Int32Array(numPages).fill(NIL);
    this.next = new Int32Array(numPages).fill(NIL);
    for (let p = 0; p < numPages; p++) this.pushTail(p);
  }

  get numFree(): number {
    return this.free;
  }

  get numUsed(): number {
    return this.numPages - this.free;
  }

  refCount(page: number): number {
    this.checkPage(page);
    return this.refCounts[page]!;
  }

  /** Called with each free page as it is handed out again (its old contents are gone). */
  onReuse(listener: (page: number) => void): void {
    this.reuseListeners.push(listener);
  }

  /** Takes the least recently freed page, refCount 1. Throws when none is free. */
  allocate(): number {
    const page = this.head;
    if (page === NIL) throw new Error('PageAllocator: out of pages');
    this.unlink(page);
    this.refCounts[page] = 1;
    for (const listener of this.reuseListeners) listener(page);
    return page;
  }

  /** Adds a holder. A free page (a prefix-cache hit) leaves the free list with its contents. */
  retain(page: number): void {
    this.checkPage(page);
    if (this.refCounts[page] === 0) this.unlink(page);
    this.refCounts[page]!++;
  }

  /** Drops a holder; the last one puts the page at the tail of the free list. */
  release(page: number): void {
    this.checkPage(page);
    const rc = this.refCounts[page]!;
    if (rc === 0) throw new Error(`PageAllocator: double free of page ${page}`);
    this.refCounts[page] = rc - 1;
    if (rc === 1) this.pushTail(page);
  }

  /** Free page ids from least to most recently freed. */
  freePages(): number[] {
    const out: number[] = [];
    for (let p = this.head; p !== NIL; p = this.next[p]!) out.push(p);
    return out;
  }

  /** Throws unless free + used = total, the free list is consistent and holds exactly the refCount-0 pages. */
  checkIntegrity(): void {
    const seen = new Uint8Array(this.numPages);
    let count = 0;
    let last = NIL;
    for (let p = this.head; p !== NIL; p = this.next[p]!) {
      if (seen[p]) throw new Error(`PageAllocator: free list cycles at page ${p}`);
      if (this.prev[p] !== last) throw new Error(`PageAllocator: broken back link at page ${p}`);
      if (this.refCounts[p] !== 0) throw new Error(`PageAllocator: page ${p} is free but held`);
      seen[p] = 1;
      last = p;
      count++;
    }
    if (last !== this.tail) throw new Error('PageAllocator: tail does not end the free list');
    if (count !== this.free)
      throw new Error(`PageAllocator: ${count} pages listed, ${this.free} counted`);
    let used = 0;
    for (let p = 0; p < this.numPages; p++) {
      const rc = this.refCounts[p]!;
      if (rc < 0) throw new Error(`PageAllocator: page ${p} has refCount ${rc}`);
      if (rc > 0) used++;
      else if (!seen[p]) throw new Error(`PageAllocator: page ${p} is unreferenced but not free`);
    }
    if (used + count !== this.numPages) {
      throw new Error(`PageAllocator: free ${count} + used ${used} != total ${this.numPages}`);
    }
  }

  private checkPage(page: number): void {
    if (!Number.isInteger(page) || page < 0 || page >= this.numPages) {
      throw new Error(`PageAllocator: page ${page} out of range [0, ${this.numPages})`);
    }
  }

  private pushTail(page: number): void {
    this.prev[page] = this.tail;
    this.next[page] = NIL;
    if (this.tail === NIL) this.head = page;
    else this.next[this.tail] = page;
    this.tail = page;
    this.free++;
  }

  private unlink(page: number): void {
    const p = this.prev[page]!;
    const n = this.next[page]!;
    if (p === NIL) this.head = n;
    else this.next[p] = n;
    if (n === NIL) this.tail = p;
    else this.prev[n] = p;
    this.prev[page] = NIL;
    this.next[page] = NIL;
    this.free--;
  }
}
