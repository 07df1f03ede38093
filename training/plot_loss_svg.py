"""Draws the loss curve of a train-log.json as a plain SVG, with no plotting library
(for machines without matplotlib; plot_loss.py draws the same curve with matplotlib).

    python3 training/plot_loss_svg.py train-log.json docs/tiny-model-loss.svg
"""
import json
import math
import sys

W, H, L, R, T, B = 700, 400, 60, 20, 30, 50


def main(log_path, svg_path):
    curve = json.load(open(log_path))["curve"]
    t_max = max(r["time_s"] for r in curve)
    losses = [r["loss"] for r in curve] + [r["val_loss"] for r in curve if "val_loss" in r]
    lo, hi = math.log10(max(min(losses), 1e-3)), math.log10(max(losses))

    def xy(t, v):
        x = L + (W - L - R) * t / t_max
        y = T + (H - T - B) * (hi - math.log10(max(v, 1e-3))) / (hi - lo)
        return f"{x:.1f},{y:.1f}"

    train = " ".join(xy(r["time_s"], r["loss"]) for r in curve)
    val = " ".join(xy(r["time_s"], r["val_loss"]) for r in curve if "val_loss" in r)
    ticks = "".join(
        f'<text x="{L - 8}" y="{T + (H - T - B) * (hi - e) / (hi - lo) + 4:.1f}" text-anchor="end">{10 ** e:g}</text>'
        for e in range(math.ceil(lo), math.floor(hi) + 1)
    )
    svg = f"""<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">
<rect width="{W}" height="{H}" fill="white"/>
<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/><line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>
{ticks}
<text x="{(W + L) / 2}" y="{H - 15}" text-anchor="middle">training time (s), 0 to {t_max:.0f}</text>
<text x="15" y="{H / 2}" transform="rotate(-90 15 {H / 2})" text-anchor="middle">loss (log scale)</text>
<polyline points="{train}" fill="none" stroke="#4477aa" stroke-width="1"/>
<polyline points="{val}" fill="none" stroke="#cc3311" stroke-width="2"/>
<text x="{W - R - 250}" y="{T + 10}" fill="#4477aa">train loss (assistant tokens)</text>
<text x="{W - R - 250}" y="{T + 26}" fill="#cc3311">validation loss</text>
</svg>
"""
    open(svg_path, "w").write(svg)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
