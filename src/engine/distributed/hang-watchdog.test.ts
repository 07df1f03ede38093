import { describe, expect, it } from 'vitest';
import { excuseCompiles, pickHungRank, type RankBeat } from './hang-watchdog.js';

const STALE = 3000;
const NOW = 100_000;
const beat = (rank: number, silentMs: number, entered: number, self = false): RankBeat => ({
  pid: 1000 + rank,
  rank,
  since: NOW - silentMs,
  entered,
  ...(self ? { self } : {}),
});

describe('pickHungRank', () => {
  it('blames nobody while every heartbeat is younger than 2 · staleMs', () => {
    expect(pickHungRank([beat(0, 5999, 10), beat(1, 5000, 3)], NOW, STALE)).toBeUndefined();
  });

  it('blames the rank behind, not the first one past the limit (W1: rank 0 was named)', () => {
    // Rank 0 (the launcher) queued step 3 and blocked in its device sync a little before
    // rank 1, blocked at the start of step 3, stopped beating: rank 0 passes 2 · staleMs first.
    const r0 = beat(0, 6100, 42, true);
    const r1 = beat(1, 5900, 37);
    expect(pickHungRank([r0, r1], NOW, STALE)).toBe(r1);
  });

  it('leaves out ranks that are still beating', () => {
    const hung = beat(2, 6500, 40);
    const fresh = beat(3, 200, 12); // fewer collectives, but responsive
    expect(pickHungRank([beat(0, 6200, 44, true), hung, fresh], NOW, STALE)).toBe(hung);
  });

  it('among equal collective counts, blames the one that stopped first', () => {
    const early = beat(1, 7000, 40);
    expect(pickHungRank([beat(0, 6500, 40, true), early, beat(2, 6800, 40)], NOW, STALE)).toBe(
      early,
    );
  });

  it('is plain JavaScript the watchdog thread can inline', () => {
    const inlined = new Function(`return (${pickHungRank.toString()});`)() as typeof pickHungRank;
    const r1 = beat(1, 5900, 37);
    expect(inlined([beat(0, 6100, 42, true), r1], NOW, STALE)).toEqual(r1);
  });
});

describe('excuseCompiles', () => {
  it('no rank is hung while one compiles, nor until 2 · staleMs after the compile ended', () => {
    // W1 on a cold cache: rank 1 sat in NVRTC for 25 s; rank 0 waited for it in a device sync.
    const beats = [beat(0, 25_000, 40, true), beat(1, 25_000, 40)];
    expect(pickHungRank(beats, NOW, STALE)).toBeDefined(); // what the watchdog saw before
    expect(pickHungRank(excuseCompiles(beats, NOW), NOW, STALE)).toBeUndefined();
    const ended = NOW - 5000; // the compile ended 5 s ago; rank 0 still waits for its collective
    expect(pickHungRank(excuseCompiles(beats, ended), NOW, STALE)).toBeUndefined();
  });

  it('a rank that hangs after the last compile is still found', () => {
    const beats = [beat(0, 20_000, 40, true), beat(1, 9000, 37)];
    const first = pickHungRank(excuseCompiles(beats, NOW - 7000), NOW, STALE);
    expect(first?.rank).toBe(1);
  });

  it('is plain JavaScript the watchdog thread can inline', () => {
    const inlined = new Function(
      `return (${excuseCompiles.toString()});`,
    )() as typeof excuseCompiles;
    expect(inlined([beat(1, 9000, 3)], NOW - 100)[0]!.since).toBe(NOW - 100);
  });
});
