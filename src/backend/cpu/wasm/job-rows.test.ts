import { describe, expect, it } from 'vitest';
import { JobRows, ROW } from './job-rows.js';

describe('JobRows: a pool job written in place', () => {
  it('writes each chunk as its export index and 23 argument slots, zero past its own', () => {
    const f = new Float64Array(8 + 3 * ROW).fill(-1);
    const job = new JobRows(f, 8, 3);
    job.add(2, 10, 20, 30);
    job.add(0, 1.5, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23);
    expect(job.length).toBe(2);
    expect(Array.from(f.subarray(0, 8))).toEqual(Array(8).fill(-1)); // before row 0: untouched
    expect(Array.from(f.subarray(8, 8 + ROW))).toEqual([2, 10, 20, 30, ...Array(20).fill(0)]);
    expect(Array.from(f.subarray(8 + ROW, 8 + 2 * ROW))).toEqual([
      0,
      1.5,
      ...Array.from({ length: 22 }, (_, i) => i + 2),
    ]);
    expect(f[8 + 2 * ROW]).toBe(-1); // the third row: not written
  });

  it('calls a chunk with its row, and starts over after clear()', () => {
    const seen: number[][] = [];
    const fns = [
      (...a: number[]) => seen.push([0, ...a.slice(0, 3)]),
      (...a: number[]) => seen.push([1, ...a.slice(0, 3)]),
    ];
    const job = new JobRows(new Float64Array(2 * ROW), 0, 2);
    job.add(1, 7, 8, 9);
    job.add(0, 4);
    job.call(1, fns);
    job.call(0, fns);
    job.clear();
    expect(job.length).toBe(0);
    job.add(0, 5, 6);
    job.call(0, fns);
    expect(seen).toEqual([
      [0, 4, 0, 0],
      [1, 7, 8, 9],
      [0, 5, 6, 0],
    ]);
  });

  it('refuses a chunk beyond its capacity', () => {
    const job = new JobRows(new Float64Array(ROW), 0, 1);
    job.add(0, 1);
    expect(() => job.add(0, 2)).toThrow(/more than 1 chunks/);
    expect(job.length).toBe(1);
  });
});
