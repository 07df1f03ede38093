import { mean } from './stats.js';
import { loadPoints, valuesAt, type Arm } from './compare-data.js';
import { metricDef } from './compare-table.js';

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];
const PANEL_W = 440;
const PANEL_H = 300;
const PAD = { left: 64, right: 16, top: 36, bottom: 44 };

const esc = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** A 1-2-5 tick step giving about five ticks up to `max`. */
export function niceStep(max: number): number {
  if (!(max > 0)) return 1;
  const raw = max / 5;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

function axes(
  title: string,
  points: readonly string[],
  yMax: number,
  step: number,
  x0: number,
): string[] {
  const plotW = PANEL_W - PAD.left - PAD.right;
  const plotH = PANEL_H - PAD.top - PAD.bottom;
  const out = [
    `<text x="${x0 + PANEL_W / 2}" y="20" text-anchor="middle" font-weight="bold">${esc(title)}</text>`,
    `<line x1="${x0 + PAD.left}" y1="${PAD.top + plotH}" x2="${x0 + PAD.left + plotW}" y2="${PAD.top + plotH}" stroke="#333"/>`,
    `<line x1="${x0 + PAD.left}" y1="${PAD.top}" x2="${x0 + PAD.left}" y2="${PAD.top + plotH}" stroke="#333"/>`,
    `<text x="${x0 + PAD.left + plotW / 2}" y="${PANEL_H - 8}" text-anchor="middle">concurrency</text>`,
  ];
  for (let v = 0; v <= yMax + 1e-9; v += step) {
    const y = (PAD.top + plotH - (v / yMax) * plotH).toFixed(1);
    const label = Number(v.toPrecision(6)).toLocaleString('en-US');
    out.push(
      `<line x1="${x0 + PAD.left}" y1="${y}" x2="${x0 + PAD.left + plotW}" y2="${y}" stroke="#eee"/>`,
    );
    out.push(
      `<text x="${x0 + PAD.left - 6}" y="${Number(y) + 4}" text-anchor="end">${label}</text>`,
    );
  }
  points.forEach((p, i) => {
    const x = x0 + PAD.left + ((i + 0.5) / points.length) * plotW;
    out.push(`<text x="${x}" y="${PAD.top + plotH + 16}" text-anchor="middle">${esc(p)}</text>`);
  });
  return out;
}

/** One panel: mean per arm joined by a line, the min–max range over runs as a bar. */
function panel(arms: readonly Arm[], metric: string, x0: number): string[] {
  const def = metricDef(metric);
  const points = loadPoints(arms);
  const all = arms.flatMap((a) => points.flatMap((p) => valuesAt(a, p, metric)));
  const step = niceStep(Math.max(...all, 0));
  const yMax = Math.max(step, Math.ceil(Math.max(...all, 0) / step) * step);
  const plotW = PANEL_W - PAD.left - PAD.right;
  const plotH = PANEL_H - PAD.top - PAD.bottom;
  const xOf = (i: number): number => x0 + PAD.left + ((i + 0.5) / points.length) * plotW;
  const yOf = (v: number): number => PAD.top + plotH - (v / yMax) * plotH;
  const out = axes(`${def.label} (${def.unit})`, points, yMax, step, x0);
  arms.forEach((a, k) => {
    const color = PALETTE[k % PALETTE.length] as string;
    const coords: string[] = [];
    points.forEach((p, i) => {
      const v = valuesAt(a, p, metric);
      if (v.length === 0) return;
      const [x, lo, hi, m] = [xOf(i), yOf(Math.min(...v)), yOf(Math.max(...v)), yOf(mean(v))];
      coords.push(`${x.toFixed(1)},${m.toFixed(1)}`);
      out.push(
        `<line x1="${x}" y1="${lo.toFixed(1)}" x2="${x}" y2="${hi.toFixed(1)}" stroke="${color}" stroke-width="2"/>`,
      );
      out.push(`<circle cx="${x}" cy="${m.toFixed(1)}" r="3.5" fill="${color}"/>`);
    });
    out.push(
      `<polyline points="${coords.join(' ')}" fill="none" stroke="${color}" stroke-width="1.5"/>`,
    );
  });
  return out;
}

/** Throughput and TPOT against concurrency, one line per arm, hand-written SVG. */
export function compareSvg(arms: readonly Arm[], metrics: readonly [string, string]): string {
  const width = PANEL_W * 2;
  const height = PANEL_H + 24 + 18 * Math.ceil(arms.length / 3);
  const legend = arms.map((a, k) => {
    const x = 20 + (k % 3) * 280;
    const y = PANEL_H + 20 + 18 * Math.floor(k / 3);
    const color = PALETTE[k % PALETTE.length] as string;
    return `<rect x="${x}" y="${y - 9}" width="12" height="12" fill="${color}"/><text x="${x + 18}" y="${y + 1}">${esc(a.label)}</text>`;
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    ...panel(arms, metrics[0], 0),
    ...panel(arms, metrics[1], PANEL_W),
    ...legend,
    '</svg>',
    '',
  ].join('\n');
}
