import { performance } from 'node:perf_hooks';
import type { BenchProgress } from './bench-runner.js';

/** How often a piped (non-TTY) stream gets a progress line of its own. */
const PIPED_INTERVAL_MS = 5000;

/**
 * Progress of a run on stderr: one self-overwriting status line on a terminal; when piped (a
 * log file, CI), a plain line every 5 s and one at the end, so the log shows it as it goes.
 */
export class ProgressLine {
  private timer: NodeJS.Timeout | undefined;
  private render: (() => string) | undefined;

  constructor(
    private readonly out: Pick<NodeJS.WriteStream, 'write' | 'isTTY'> = process.stderr,
    private readonly pipedIntervalMs = PIPED_INTERVAL_MS,
  ) {}

  start(p: BenchProgress, label: string): void {
    this.render = () => renderProgress(p, label);
    const tty = this.out.isTTY;
    const tick = tty
      ? () => this.out.write(`\r${this.render!()}\x1b[K`)
      : () => this.out.write(`${this.render!()}\n`);
    this.timer = setInterval(tick, tty ? 250 : this.pipedIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.out.write(this.out.isTTY ? '\r\x1b[K' : `${this.render!()}\n`);
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
