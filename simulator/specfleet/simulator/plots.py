"""SHELL: the PNG plots of `specfleet simulate` (matplotlib writes files; the data is evaluation.py's)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

from specfleet.simulator.evaluation import AUTO, BASELINES, BeliefPoint, Evaluation, crossover, latency_vs_load


def plot_latency_vs_load(evaluation: Evaluation, path: Path) -> float | None:
    """Mean TPOT against offered load for each policy; the crossover (off beats every static k) marked."""
    replicas = evaluation.scenario.replicas
    top = float(evaluation.scenario.trace.qps.max()) / replicas
    curves = {
        name: latency_vs_load(result, replicas, top=top)
        for name, result in evaluation.results.items()
        if name in BASELINES or name == AUTO
    }
    cross = crossover(curves)
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, (x, y) in curves.items():
        ax.plot(x, y * 1e3, marker="o", lw=2.5 if name == AUTO else 1.2, label=name)
    if cross is not None:
        ax.axvline(cross, color="grey", ls="--")
        ax.annotate(f"crossover ≈ {cross:.1f} req/s/replica", (cross, ax.get_ylim()[1]), ha="right", va="top")
    ax.set_xlabel("offered load (requests/s per replica)")
    ax.set_ylabel("mean TPOT (ms)")
    ax.set_title(f"{evaluation.scenario.name}: latency against load")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return cross


def plot_timeline(evaluation: Evaluation, path: Path) -> None:
    """Offered load and Auto's running configuration over the trace, with the oracle's choice beneath."""
    auto = evaluation.results[AUTO]
    hours = [p.time / 3600 for p in auto.timeline]
    configs = sorted({p.config for p in auto.timeline} | {name for _, name in evaluation.oracle_timeline})
    fig, (load_ax, config_ax) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    load_ax.plot(hours, [p.qps for p in auto.timeline], color="tab:blue", label="arrivals/s (fleet)")
    load_ax.set_ylabel("requests/s")
    running_ax = load_ax.twinx()
    running_ax.plot(hours, [p.running_per_replica for p in auto.timeline], color="tab:orange", alpha=0.6)
    running_ax.set_ylabel("running per replica", color="tab:orange")
    config_ax.step(hours, [configs.index(p.config) for p in auto.timeline], where="post", label="auto", lw=2)
    oracle_hours = [t / 3600 for t, _ in evaluation.oracle_timeline]
    oracle_y = [configs.index(name) for _, name in evaluation.oracle_timeline]
    config_ax.step(oracle_hours, oracle_y, where="post", label="oracle", alpha=0.5)
    config_ax.set_yticks(range(len(configs)), configs, fontsize=7)
    config_ax.set_xlabel("hours")
    config_ax.legend(loc="upper right")
    load_ax.set_title(f"{evaluation.scenario.name}: decisions over the trace")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_belief(evaluation: Evaluation, points: list[BeliefPoint], path: Path) -> None:
    """Auto's fitted S(k,B) with one standard deviation, against the simulated fleet's true speed-up."""
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, k in enumerate(sorted({p.k for p in points})):
        mine = [p for p in points if p.k == k]
        color = f"C{i}"
        batches = [p.batch for p in mine]
        ax.errorbar(batches, [p.fitted for p in mine], yerr=[p.std for p in mine], color=color, marker="o",
                    capsize=3, label=f"k={k} fitted")  # fmt: skip
        ax.plot(batches, [p.truth for p in mine], color=color, ls="--", marker="x", label=f"k={k} truth")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("running sequences per replica")
    ax.set_ylabel("speed-up over no speculation")
    ax.set_title(f"{evaluation.scenario.name}: what the policy believed at the end, against the fleet it ran on")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
