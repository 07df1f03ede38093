import { describe, expect, it } from 'vitest';
import { loadSummary, progressBar, StreamLoadProgress } from './load-progress.js';

function sink(isTTY: boolean) {
  const chunks: string[] = [];
  return { isTTY, chunks, write: (s: string) => chunks.push(s) };
}

describe('load progress', () => {
  it('the summary line: tensors, GB, seconds, GB/s', () => {
    expect(loadSummary({ tensors: 1155, bytes: 21.75e9, seconds: 8.7, dummy: false })).toBe(
      'loaded 1155 tensors, 21.75 GB in 8.7 s (2.50 GB/s)',
    );
    expect(loadSummary({ tensors: 137, bytes: 12.3e6, seconds: 0.04, dummy: true })).toBe(
      'loaded 137 tensors, 12.3 MB in 0.0 s (0.31 GB/s), random weights (--load-format dummy)',
    );
  });

  it('piped: one line per tenth after the first second, then the summary', () => {
    let now = 0;
    const out = sink(false);
    const p = new StreamLoadProgress(out, () => now);
    p.start(10e9, 100);
    for (let i = 0; i < 40; i++) {
      now += 250; // 0.25 s per 0.25 GB: 1 GB/s
      p.advance(0.25e9);
    }
    p.done({ tensors: 100, bytes: 10e9, seconds: 10, dummy: false });
    expect(out.chunks).toEqual([
      'loading weights: 10% (1.00 GB of 10.00 GB, 1.00 GB/s)\n',
      'loading weights: 20% (2.00 GB of 10.00 GB, 1.00 GB/s)\n',
      'loading weights: 30% (3.00 GB of 10.00 GB, 1.00 GB/s)\n',
      'loading weights: 40% (4.00 GB of 10.00 GB, 1.00 GB/s)\n',
      'loading weights: 50% (5.00 GB of 10.00 GB, 1.00 GB/s)\n',
      'loading weights: 60% (6.00 GB of 10.00 GB, 1.00 GB/s)\n',
      'loading weights: 70% (7.00 GB of 10.00 GB, 1.00 GB/s)\n',
      'loading weights: 80% (8.00 GB of 10.00 GB, 1.00 GB/s)\n',
      'loading weights: 90% (9.00 GB of 10.00 GB, 1.00 GB/s)\n',
      'loaded 100 tensors, 10.00 GB in 10.0 s (1.00 GB/s)\n',
    ]);
  });

  it('a terminal gets a bar redrawn in place at most every 100 ms, cleared before the summary', () => {
    let now = 0;
    const out = sink(true);
    const p = new StreamLoadProgress(out, () => now);
    p.start(4e9, 10);
    for (let i = 0; i < 40; i++) {
      now += 50;
      p.advance(0.1e9);
    }
    p.done({ tensors: 10, bytes: 4e9, seconds: 2, dummy: false });
    const bars = out.chunks.slice(0, -1);
    // 2 s of updates every 50 ms, quiet for the first second, then every other update.
    expect(bars).toHaveLength(11);
    expect(bars.every((b) => b.startsWith('\rloading weights [') && b.endsWith('\x1b[K'))).toBe(
      true,
    );
    expect(bars.at(-1)).toBe(`\r${progressBar(4e9, 4e9, 2)}\x1b[K`);
    expect(out.chunks.at(-1)).toBe('\r\x1b[Kloaded 10 tensors, 4.00 GB in 2.0 s (2.00 GB/s)\n');
  });

  it('a load under a second prints only the summary', () => {
    let now = 0;
    const out = sink(false);
    const p = new StreamLoadProgress(out, () => now);
    p.start(1e9, 3);
    for (let i = 0; i < 10; i++) {
      now += 50;
      p.advance(0.1e9);
    }
    p.done({ tensors: 3, bytes: 1e9, seconds: 0.5, dummy: false });
    expect(out.chunks).toEqual(['loaded 3 tensors, 1.00 GB in 0.5 s (2.00 GB/s)\n']);
  });
});
