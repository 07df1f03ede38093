import { describe, expect, it } from 'vitest';
import { ThreadMode } from './thread-mode.js';

/** Runs `jobs` jobs of 1 MFLOP through `m`, each taking `msOf(threaded)`; the threaded share. */
function drive(m: ThreadMode, jobs: number, msOf: (threaded: boolean) => number): number {
  let threaded = 0;
  for (let i = 0; i < jobs; i++) {
    const t = m.threaded;
    if (t) threaded++;
    m.record(1e6, msOf(t));
  }
  return threaded / jobs;
}

describe('ThreadMode: threaded or solo by measured rate', () => {
  it('settles on the faster mode, exploring solo one window in 64, threads one in 16', () => {
    const m = new ThreadMode(true);
    expect(drive(m, 128 * 64, (t) => (t ? 0.6 : 1))).toBeGreaterThan(0.9); // threads 1.7× faster
    const solo = new ThreadMode(true);
    const share = drive(solo, 128 * 64, (t) => (t ? 1.4 : 1)); // a busy machine: threads lose
    expect(share).toBeLessThan(0.1);
    expect(share).toBeGreaterThan(0); // still explores
    // 256 windows: solo in windows 1, 64, 128, 192 while threads win; threaded in window 0
    // and every 16th from 16 to 240 while solo wins
    expect(drive(new ThreadMode(true), 128 * 256, (t) => (t ? 0.6 : 1))).toBe(1 - 4 / 256);
    expect(drive(new ThreadMode(true), 128 * 256, (t) => (t ? 1.4 : 1))).toBe(16 / 256);
  });

  it('follows a change of load within a few explore windows', () => {
    const m = new ThreadMode(true);
    drive(m, 128 * 64, (t) => (t ? 0.6 : 1)); // quiet: threaded
    drive(m, 128 * 80, (t) => (t ? 1.5 : 1)); // others take a core: solo tried in window 128
    expect(drive(m, 128 * 64, (t) => (t ? 1.5 : 1))).toBeLessThan(0.1);
    drive(m, 128 * 48, (t) => (t ? 0.6 : 1)); // quiet again
    expect(drive(m, 128 * 64, (t) => (t ? 0.6 : 1))).toBeGreaterThan(0.9);
  });

  it('does not time the first jobs after a change of mode', () => {
    // threaded jobs take 2 ms for the first 48 after a switch (the worker waking), then 0.6;
    // timed whole, a threaded window (1.125 ms a job) loses to solo (1 ms) and solo stays
    let mode = -1;
    let since = 0;
    const msOf = (t: boolean): number => {
      since = Number(t) === mode ? since + 1 : 0;
      mode = Number(t);
      return t ? (since < 48 ? 2 : 0.6) : 1;
    };
    expect(drive(new ThreadMode(true), 128 * 64, msOf)).toBeGreaterThan(0.9);
  });

  it('stays threaded when disabled', () => {
    const m = new ThreadMode(false);
    expect(drive(m, 128 * 64, (t) => (t ? 2 : 1))).toBe(1);
  });
});
