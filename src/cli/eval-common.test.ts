import { describe, expect, it } from 'vitest';
import { progressTick } from './eval-common.js';

describe('progressTick', () => {
  it('writes a line of its own at every tenth when piped', () => {
    const writes: string[] = [];
    const out = { isTTY: false, write: (s: string) => writes.push(s) > 0 } as NodeJS.WriteStream;
    for (let done = 1; done <= 25; done++) progressTick('stop-rate', done, 25, out);
    expect(writes).toEqual([3, 6, 9, 12, 15, 18, 21, 24, 25].map((d) => `stop-rate ${d}/25\n`));
  });

  it('overwrites one line on a terminal', () => {
    const writes: string[] = [];
    const out = { isTTY: true, write: (s: string) => writes.push(s) > 0 } as NodeJS.WriteStream;
    progressTick('gsm8k', 1, 2, out);
    progressTick('gsm8k', 2, 2, out);
    expect(writes).toEqual(['\rgsm8k 1/2\x1b[K', '\rgsm8k 2/2\x1b[K\n']);
  });
});
