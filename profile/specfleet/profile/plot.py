"""SHELL. The report's PNG: throughput and mean TPOT against concurrency, one curve per k, crossovers marked."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

from specfleet.profile.report import ProfileReport

_METRICS = (("throughput", "throughput (output tokens/s)"), ("tpot", "mean TPOT (ms)"))


def write_png(report: ProfileReport, path: Path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    ks = sorted({point.k for point in report.points})
    colors = {k: f"C{index}" for index, k in enumerate(ks)}
    concurrencies = sorted({point.concurrency for point in report.points})
    for ax, (metric, label) in zip(axes, _METRICS, strict=True):
        for k in ks:
            points = sorted((p for p in report.points if p.k == k), key=lambda p: p.concurrency)
            x = [p.concurrency for p in points]
            y = [
                p.throughput_tokens_per_second if metric == "throughput" else (p.tpot_seconds.mean or 0.0) * 1e3
                for p in points
            ]
            ax.plot(x, y, marker="o", color=colors[k], label=f"k={k}")
        for crossover in report.crossovers:
            if crossover.metric == metric and crossover.bound == "within" and crossover.concurrency is not None:
                ax.axvline(crossover.concurrency, color=colors[crossover.k], ls="--", lw=1)
                ax.annotate(
                    f"k={crossover.k}: {crossover.concurrency:.1f}",
                    (crossover.concurrency, ax.get_ylim()[1]),
                    color=colors[crossover.k],
                    ha="right",
                    va="top",
                    fontsize=8,
                )
        ax.set_xscale("log", base=2)
        ax.set_xticks(concurrencies, [str(c) for c in concurrencies])
        ax.minorticks_off()
        ax.set_xlabel("concurrency (requests in flight)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{report.model}: speculation against concurrency (dashed: crossover)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
