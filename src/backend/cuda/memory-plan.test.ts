import { describe, expect, it } from 'vitest';
import { planKvPages } from './memory-plan.js';

describe('planKvPages', () => {
  it('gives the pages that fit after the reserve', () => {
    const pages = planKvPages({
      freeBytes: 14 * 2 ** 30,
      bytesPerPage: 2 ** 20,
      reserveBytes: 4 * 2 ** 30,
      fraction: 1,
      minPages: 1,
    });
    expect(pages).toBe(10 * 1024);
  });
  it('fails with one clear line when the model does not fit', () => {
    expect(() =>
      planKvPages({ freeBytes: 3 * 2 ** 30, bytesPerPage: 2 ** 20, minPages: 16 }),
    ).toThrow(/does not fit: 3\.00 GiB free/);
  });
});
