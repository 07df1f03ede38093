import { performance } from 'node:perf_hooks';
import type { BenchProgress } from './bench-runner.js';

/** Renders one self-overwriting status line on a TTY stream; does nothing elsewhere. */
export class ProgressLine {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly out: NodeJS.WriteStream = process.stderr) {}

  start(p: BenchProgress, label: string): void {
    if (!this.out.isTTY) return;
    this.timer = setInterval(() => this.out.write(`\r${renderProgress(p, label)}\x1b[K`), 250);
    this.timer.unref();
  }

  stop(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.out.write('\r\x1b[K');
  }
}

export function renderProgress(p: BenchProgress, label: string, nowMs = performance.now()): string {
  const done = p.completed + p.failed;
  const frac = p.total > 0 ? done / p.total : 0;
  const width = 24;
  const filled = Math.round(frac * width);
  const bar = '#'.repeat(filled) + '.'.repeat(width - filled);
  const secs = Math.max(0.001, (nowMs - p.startMs) / 1000);
  return (
    `${label} [${bar}] ${done}/${p.total} ok ${p.completed} fail ${p.failed} ` +
    `in-flight ${p.started - done} | ${(p.outputTokens / secs).toFixed(0)} out tok/s | ${secs.toFixed(1)} s`
  );
}
