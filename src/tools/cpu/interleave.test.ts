import { describe, expect, it } from 'vitest';
import { orderNote, roundOrder, timeInterleaved, type BenchClock } from './interleave.js';

/**
 * A fake clock advanced only by the fake steps: each step records (config, i) and costs
 * `cost(config, i, slot)` wall ms and half that in CPU ms, where slot is its position in
 * its round. No real time is measured.
 */
function fakeBench(n: number, cost: (k: number, i: number, slot: number) => number) {
  let now = 0;
  let cpu = 0;
  let lastI = Number.NaN;
  let slot = 0;
  const calls: [number, number][] = [];
  const clock: BenchClock = { now: () => now, cpuMs: () => cpu };
  const runs = Array.from({ length: n }, (_, k) => async (i: number): Promise<void> => {
    // a new round starts when i changes (timed rounds) or every n warm-up calls
    slot = i !== lastI || slot === n - 1 ? 0 : slot + 1;
    lastI = i;
    calls.push([k, i]);
    const ms = cost(k, i, slot);
    now += ms;
    cpu += ms / 2;
  });
  return { clock, runs, calls };
}

describe('timeInterleaved', () => {
  it('rotates the order each round: AB, BA, AB, ...', () => {
    expect([0, 1, 2, 3].map((r) => roundOrder(r, 2))).toEqual([[0, 1], [1, 0], [0, 1], [1, 0]]); // prettier-ignore
    expect([0, 1, 2].map((r) => roundOrder(r, 3))).toEqual([[0, 1, 2], [1, 2, 0], [2, 0, 1]]); // prettier-ignore
  });

  it('warms every configuration, interleaved, before any timed step, then alternates', async () => {
    const { clock, runs, calls } = fakeBench(2, (k) => (k === 0 ? 50 : 20));
    await timeInterleaved(runs, 3, 4, clock, 100);
    const warm = calls.filter(([, i]) => i === -1);
    const timed = calls.filter(([, i]) => i >= 0);
    // warm-up first: every (k, -1) call precedes every timed call
    expect(calls.slice(0, warm.length)).toEqual(warm);
    // B (20 ms) needs 5 steps for 100 ms; A (50 ms) keeps warming alongside: AB, BA, AB, BA, AB
    expect(warm.map(([k]) => k)).toEqual([0, 1, 1, 0, 0, 1, 1, 0, 0, 1]);
    expect(timed).toEqual([[0, 0], [1, 0], [1, 1], [0, 1], [0, 2], [1, 2], [1, 3], [0, 3]]); // prettier-ignore
  });

  it('warms for at least `warm` steps even when they are fast', async () => {
    const { clock, runs, calls } = fakeBench(2, () => 1);
    await timeInterleaved(runs, 5, 2, clock, 0);
    expect(calls.filter(([k, i]) => k === 1 && i === -1)).toHaveLength(5);
    expect(calls.filter(([k, i]) => k === 0 && i === -1)).toHaveLength(5);
  });

  it('reports per-configuration medians and CPU ms per timed step', async () => {
    // A's timed steps take 1, 2, 9, 2, 1, 2 ms; B's 3, 5, 4, 100, 4, 3 (warm-ups 1 ms)
    const a = [1, 2, 9, 2, 1, 2];
    const b = [3, 5, 4, 100, 4, 3];
    const { clock, runs } = fakeBench(2, (k, i) => (i < 0 ? 1 : (k === 0 ? a : b)[i]!));
    const [ta, tb] = await timeInterleaved(runs, 1, 6, clock, 0);
    expect(ta!.ms).toBe(2);
    expect(tb!.ms).toBe(4);
    expect(ta!.cpuMs).toBeCloseTo(17 / 2 / 6, 12);
    expect(tb!.cpuMs).toBeCloseTo(119 / 2 / 6, 12);
  });

  it('spreads a first-in-round penalty evenly: equal configurations time equal', async () => {
    // whichever step runs first in a round pays 3 ms extra (the bias timed one after another)
    for (const n of [2, 3]) {
      const { clock, runs } = fakeBench(n, (_k, _i, slot) => (slot === 0 ? 5 : 2));
      const t = await timeInterleaved(runs, 1, 6, clock, 0);
      expect(new Set(t.map((x) => x.ms)).size).toBe(1);
      expect(new Set(t.map((x) => x.cpuMs)).size).toBe(1);
      // each configuration was first in 6 / n of its 6 timed steps
      expect(t[0]!.cpuMs).toBeCloseTo(((6 / n) * 5 + (6 - 6 / n) * 2) / 2 / 6, 12);
    }
  });

  it('takes turns of a block: untimed lead steps, then the timed ones in order', async () => {
    const { clock, runs, calls } = fakeBench(2, () => 1);
    await timeInterleaved(runs, 1, 6, clock, 0, { steps: 3, lead: 2 });
    const timedPart = calls.slice(2); // after the warm-up round AB
    // turns: A (lead, lead, 0, 1, 2), then B, then B and A rotated for steps 3..5
    expect(timedPart).toEqual([
      [0, -1], [0, -1], [0, 0], [0, 1], [0, 2],
      [1, -1], [1, -1], [1, 0], [1, 1], [1, 2],
      [1, -1], [1, -1], [1, 3], [1, 4], [1, 5],
      [0, -1], [0, -1], [0, 3], [0, 4], [0, 5],
    ]); // prettier-ignore
  });

  it('times only the timed steps of a block', async () => {
    // lead steps (i = -1) cost 50 ms, timed ones 2 (A) and 3 (B)
    const { clock, runs } = fakeBench(2, (k, i) => (i < 0 ? 50 : k === 0 ? 2 : 3));
    const [ta, tb] = await timeInterleaved(runs, 1, 4, clock, 0, { steps: 2, lead: 1 });
    expect(ta!.ms).toBe(2);
    expect(tb!.ms).toBe(3);
    expect(ta!.cpuMs).toBe(1);
  });

  it('notes the order used', () => {
    expect(orderNote(['2 threads', '1 thread'])).toBe(
      'interleaved, rotated each step: 2 threads, 1 thread',
    );
    expect(orderNote(['2 threads', '1 thread'], { steps: 5, lead: 2 })).toBe(
      'interleaved, rotated each 5 timed steps after 2 untimed: 2 threads, 1 thread',
    );
    expect(orderNote(['1 thread'])).toBe('alone');
  });
});
