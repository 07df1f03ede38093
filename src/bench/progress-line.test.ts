import { describe, expect, it } from 'vitest';
import { newProgress } from './bench-runner.js';
import { ProgressLine } from './progress-line.js';

function sink(isTTY: boolean) {
  const writes: string[] = [];
  return { isTTY, writes, write: (s: string) => writes.push(s) > 0 };
}

describe('ProgressLine', () => {
  it('prints plain lines as it goes and a last one at the end when piped', async () => {
    const out = sink(false);
    const p = newProgress(4);
    const line = new ProgressLine(out, 20);
    line.start(p, 'conc 1 run 0');
    await new Promise((r) => setTimeout(r, 70));
    p.completed = 4;
    line.stop();
    expect(out.writes.length).toBeGreaterThanOrEqual(2);
    for (const w of out.writes) expect(w).toMatch(/^conc 1 run 0 \[[#.]+\] \d\/4 .*\n$/);
    expect(out.writes.at(-1)).toContain(' 4/4 ok 4 ');
    expect(out.writes.join('')).not.toContain('\r');
  });

  it('overwrites one line on a terminal and clears it at the end', async () => {
    const out = sink(true);
    const line = new ProgressLine(out, 20);
    line.start(newProgress(2), 'x');
    await new Promise((r) => setTimeout(r, 300));
    line.stop();
    expect(out.writes[0]).toMatch(/^\rx \[/);
    expect(out.writes.at(-1)).toBe('\r\x1b[K');
  });
});
