import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PageAllocator } from './page-allocator.js';
import { pageHash, PrefixCache } from './prefix-cache.js';

function chain(tokens: number[], pageSize: number): string[] {
  const out: string[] = [];
  for (let i = 0; (i + 1) * pageSize <= tokens.length; i++) {
    out.push(pageHash(out[i - 1] ?? null, tokens.slice(i * pageSize, (i + 1) * pageSize)));
  }
  return out;
}

describe('pageHash', () => {
  it('depends on the whole prefix, not only the page', () => {
    const a = chain([1, 2, 3, 4], 2);
    const b = chain([9, 2, 3, 4], 2);
    expect(a).toHaveLength(2);
    expect(a[1]).not.toBe(b[1]);
    expect(chain([1, 2, 3, 4, 5], 2)).toEqual(a);
    expect(pageHash(null, [1, 2])).not.toBe(pageHash(null, [2, 1]));
  });
});

describe('PrefixCache', () => {
  it('matches the longest cached prefix and retains its pages', () => {
    const alloc = new PageAllocator(8);
    const cache = new PrefixCache(alloc);
    const hashes = chain([1, 2, 3, 4, 5, 6], 2);
    const pages = hashes.map(() => alloc.allocate());
    cache.insert(hashes[0]!, pages[0]!);
    cache.insert(hashes[1]!, pages[1]!);
    expect(cache.match(hashes)).toEqual([pages[0], pages[1]]);
    expect(alloc.refCount(pages[0]!)).toBe(2);
    expect(cache.match(chain([1, 2, 9, 9], 2))).toEqual([pages[0]]);
    expect(cache.match(chain([7, 7], 2))).toEqual([]);
  });

  it('first writer wins; a second page with the same prefix stays private', () => {
    const alloc = new PageAllocator(4);
    const cache = new PrefixCache(alloc);
    const [h] = chain([1, 2], 2);
    const p = alloc.allocate();
    const q = alloc.allocate();
    expect(cache.insert(h!, p)).toBe(true);
    expect(cache.insert(h!, q)).toBe(false);
    expect(cache.size).toBe(1);
  });

  it('keeps free cached pages reusable until the allocator needs them, oldest first', () => {
    const alloc = new PageAllocator(3);
    const cache = new PrefixCache(alloc);
    const hashes = chain([1, 2, 3, 4, 5, 6], 2);
    const pages = hashes.map((h) => {
      const p = alloc.allocate();
      cache.insert(h, p);
      return p;
    });
    // Released tail first, so the tail is evicted before the root.
    for (const p of [...pages].reverse()) alloc.release(p);
    expect(alloc.numFree).toBe(3);
    expect(cache.numCachedFree()).toBe(3);
    expect(alloc.allocate()).toBe(pages[2]);
    expect(cache.size).toBe(2);
    expect(cache.match(hashes)).toEqual([pages[0], pages[1]]);
    cache.checkIntegrity();
    alloc.checkIntegrity();
  });

  it('refuses to label a free page or relabel a page', () => {
    const alloc = new PageAllocator(2);
    const cache = new PrefixCache(alloc);
    expect(() => cache.insert('x', 0)).toThrow(/free/);
    const p = alloc.allocate();
    cache.insert('x', p);
    expect(() => cache.insert('y', p)).toThrow(/already/);
  });

  it('stays consistent with the allocator under random operations', () => {
    const op = fc.record({ kind: fc.nat(3), a: fc.nat(), b: fc.nat() });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 }), fc.array(op, { maxLength: 150 }), (n, ops) => {
        const alloc = new PageAllocator(n);
        const cache = new PrefixCache(alloc);
        const held: number[] = [];
        const hashes = Array.from({ length: 6 }, (_, i) => `h${i}`);
        for (const o of ops) {
          if (o.kind === 0 && alloc.numFree > 0) held.push(alloc.allocate());
          else if (o.kind === 1 && held.length > 0) {
            alloc.release(held.splice(o.a % held.length, 1)[0]!);
          } else if (o.kind === 2 && held.length > 0) {
            const page = held[o.a % held.length]!;
            const hash = hashes[o.b % hashes.length]!;
            // Callers only label fresh pages; relabelling one is a bug the cache reports.
            if (cache.labelOf(page) === undefined) cache.insert(hash, page);
          } else if (o.kind === 3) {
            held.push(...cache.match(hashes.slice(0, 1 + (o.a % hashes.length))));
          }
          alloc.checkIntegrity();
          cache.checkIntegrity();
          expect(alloc.numUsed).toBe(new Set(held).size);
        }
      }),
      { numRuns: 300 },
    );
  });
});
