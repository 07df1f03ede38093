import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PageAllocator } from './page-allocator.js';

describe('PageAllocator', () => {
  it('hands out every page once, then throws', () => {
    const a = new PageAllocator(4);
    const got = [a.allocate(), a.allocate(), a.allocate(), a.allocate()];
    expect(new Set(got).size).toBe(4);
    expect(a.numFree).toBe(0);
    expect(a.numUsed).toBe(4);
    expect(() => a.allocate()).toThrow(/out of pages/);
    a.checkIntegrity();
  });

  it('reuses the least recently freed page first', () => {
    const a = new PageAllocator(3);
    const [p0, p1, p2] = [a.allocate(), a.allocate(), a.allocate()];
    a.release(p2);
    a.release(p0);
    a.release(p1);
    expect(a.freePages()).toEqual([p2, p0, p1]);
    expect(a.allocate()).toBe(p2);
  });

  it('keeps a shared page until its last holder releases it', () => {
    const a = new PageAllocator(2);
    const p = a.allocate();
    a.retain(p);
    expect(a.refCount(p)).toBe(2);
    a.release(p);
    expect(a.numFree).toBe(1);
    a.release(p);
    expect(a.numFree).toBe(2);
    expect(() => a.release(p)).toThrow(/double free/);
    a.checkIntegrity();
  });

  it('retaining a free page takes it off the free list with its contents', () => {
    const a = new PageAllocator(3);
    const p = a.allocate();
    a.release(p);
    const reused: number[] = [];
    a.onReuse((x) => reused.push(x));
    a.retain(p);
    expect(a.refCount(p)).toBe(1);
    expect(a.freePages()).not.toContain(p);
    expect(reused).toEqual([]);
    a.allocate();
    expect(reused).toHaveLength(1);
    a.checkIntegrity();
  });

  it('rejects pages out of range', () => {
    const a = new PageAllocator(2);
    expect(() => a.retain(2)).toThrow(/out of range/);
    expect(() => a.release(-1)).toThrow(/out of range/);
    expect(() => new PageAllocator(0)).toThrow();
  });

  it('keeps free + used = total under random operations', () => {
    type Op = { kind: 'alloc' } | { kind: 'retain' | 'release'; pick: number };
    const op = fc.oneof(
      fc.constant<Op>({ kind: 'alloc' }),
      fc.record({ kind: fc.constantFrom('retain', 'release'), pick: fc.nat() }) as fc.Arbitrary<Op>,
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.array(op, { maxLength: 200 }), (n, ops) => {
        const a = new PageAllocator(n);
        const model = new Array<number>(n).fill(0);
        for (const o of ops) {
          if (o.kind === 'alloc') {
            if (a.numFree === 0) {
              expect(() => a.allocate()).toThrow();
              continue;
            }
            const p = a.allocate();
            expect(model[p]).toBe(0);
            model[p] = 1;
          } else {
            const p = o.pick % n;
            if (o.kind === 'retain') {
              a.retain(p);
              model[p]!++;
            } else if (model[p] === 0) {
              expect(() => a.release(p)).toThrow(/double free/);
            } else {
              a.release(p);
              model[p]!--;
            }
          }
          a.checkIntegrity();
          expect(a.numUsed).toBe(model.filter((r) => r > 0).length);
          for (let p = 0; p < n; p++) expect(a.refCount(p)).toBe(model[p]);
        }
      }),
      { numRuns: 300 },
    );
  });
});
