"""Draws the loss curve of a train-log.json as an SVG (matplotlib, no display needed).

    python3 training/plot_loss.py train-log.json docs/tiny-model-loss.svg
"""
import json
import sys

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402


def main(log_path, svg_path):
    log = json.load(open(log_path))
    curve = log["curve"]
    t = [r["time_s"] for r in curve]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(t, [r["loss"] for r in curve], label="train loss (assistant tokens)", lw=1)
    val = [r for r in curve if "val_loss" in r]
    ax.plot([r["time_s"] for r in val], [r["val_loss"] for r in val], "o-", label="validation loss", ms=3)
    ax.plot(t, [r["index_kl"] for r in curve], label="MSA index KL", lw=1, alpha=0.7)
    ax.set_yscale("log")
    ax.set_xlabel("training time on one H200 (s)")
    ax.set_ylabel("loss (nats / token)")
    ax.set_title(f"moeserve-tiny-m3: {log['steps']} steps, {log['tokens_seen'] / 1e6:.0f}M tokens seen")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    fig.savefig(svg_path, metadata={"Date": None})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
