import { performance } from 'node:perf_hooks';
import type { LoadStats } from './weight-source.js';

/** Receives a load's progress: total bytes first, then bytes as they land, then the result. */
export interface LoadProgress {
  start(totalBytes: number, tensors: number): void;
  advance(bytes: number): void;
  done(stats: LoadStats): void;
}

/** Where progress is written: a stream, and whether it is a terminal. */
export interface ProgressSink {
  readonly isTTY?: boolean;
  write(text: string): unknown;
}

const GB = 1e9;
const BAR = 30;
/** Loads shorter than this print only the summary: no bar flash, no progress lines. */
const QUIET_MS = 1000;

/** Decimal GB, or MB below 0.1 GB (the bundled model is 12 MB). */
export function fmtSize(bytes: number): string {
  return bytes >= 0.1 * GB ? `${(bytes / GB).toFixed(2)} GB` : `${(bytes / 1e6).toFixed(1)} MB`;
}

/** `loaded N tensors, X GB in Y s (Z GB/s)`, the line every load ends with. */
export function loadSummary(s: LoadStats): string {
  const rate = s.bytes / GB / Math.max(s.seconds, 1e-6);
  const line = `loaded ${s.tensors} tensors, ${fmtSize(s.bytes)} in ${s.seconds.toFixed(1)} s (${rate.toFixed(2)} GB/s)`;
  return s.dummy ? `${line}, random weights (--load-format dummy)` : line;
}

/** The bar a terminal shows, redrawn in place. */
export function progressBar(done: number, total: number, seconds: number): string {
  const frac = total > 0 ? Math.min(1, done / total) : 1;
  const filled = Math.round(frac * BAR);
  const rate = done / GB / Math.max(seconds, 1e-6);
  return (
    `loading weights [${'#'.repeat(filled)}${'.'.repeat(BAR - filled)}] ${(100 * frac).toFixed(0).padStart(3)}% ` +
    `${fmtSize(done)} of ${fmtSize(total)} ${rate.toFixed(2)} GB/s`
  );
}

/** The line a pipe gets at every tenth of the load. */
export function progressLine(done: number, total: number, seconds: number): string {
  const frac = total > 0 ? done / total : 1;
  const rate = done / GB / Math.max(seconds, 1e-6);
  return `loading weights: ${(100 * frac).toFixed(0)}% (${fmtSize(done)} of ${fmtSize(total)}, ${rate.toFixed(2)} GB/s)`;
}

/**
 * Progress on a stream: a bar redrawn at most every `redrawMs` on a terminal, one line per
 * 10% when piped (logs stay readable), and the summary line at the end. Nothing but the
 * summary for loads that finish within a second.
 */
export class StreamLoadProgress implements LoadProgress {
  private total = 0;
  private doneBytes = 0;
  private t0 = 0;
  private lastDraw = -Infinity;
  private nextTenth = 1;

  constructor(
    private readonly out: ProgressSink,
    private readonly now: () => number = () => performance.now(),
    private readonly redrawMs = 100,
  ) {}

  start(totalBytes: number, _tensors?: number): void {
    this.total = totalBytes;
    this.t0 = this.now();
  }

  advance(bytes: number): void {
    this.doneBytes += bytes;
    const t = this.now();
    const secs = (t - this.t0) / 1000;
    if (t - this.t0 < QUIET_MS) return;
    if (this.out.isTTY) {
      if (t - this.lastDraw < this.redrawMs) return;
      this.lastDraw = t;
      this.out.write(`\r${progressBar(this.doneBytes, this.total, secs)}\x1b[K`);
      return;
    }
    if (this.total <= 0) return;
    const tenths = Math.floor((10 * this.doneBytes) / this.total);
    if (tenths < this.nextTenth || tenths >= 10) return;
    this.nextTenth = tenths + 1;
    this.out.write(`${progressLine(this.doneBytes, this.total, secs)}\n`);
  }

  done(stats: LoadStats): void {
    const clear = this.out.isTTY && this.lastDraw > -Infinity ? '\r\x1b[K' : '';
    this.out.write(`${clear}${loadSummary(stats)}\n`);
  }
}
