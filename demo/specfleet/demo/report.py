"""SHELL the end of a demo run: the live run against the static baselines on the same trace, and a PNG.

The baselines (off, k=1, k=3, k=5, vLLM's documented table) and the policy's own simulated run are
`specfleet simulate` on the run's trace (same load, same pod start-up time); the live row is what the local
fleet's engines measured for every request completed while the real operator was in charge.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
import numpy as np
from rich import box
from rich.table import Table

from specfleet.demo.effects import ChangeEffect, Outcomes, change_effects
from specfleet.demo.fleet import Completed
from specfleet.demo.load import Answer
from specfleet.demo.resources import FleetSpec
from specfleet.demo.timeline import Timeline
from specfleet.operator.api.policy_types import PolicySpec
from specfleet.operator.policy.state import SpecConfig
from specfleet.simulator.evaluation import (
    AUTO,
    BASELINES,
    BEST_TABLE,
    RESTART_ORACLE,
    TABLE_CANDIDATES,
    Evaluation,
    Scenario,
    evaluate,
)
from specfleet.simulator.traces import Trace

LIVE = "live"


@dataclass(frozen=True)
class Row:
    name: str
    requests: int
    tpot_mean: float
    tpot_p90: float
    e2e_mean: float
    e2e_p90: float
    throughput: float  # generated tokens/s
    changes: int


def live_row(completed: Sequence[Completed], duration: float, changes: int) -> Row:
    tpot = [c.finished.tpot for c in completed]
    e2e = [c.finished.e2e for c in completed]
    return _row(LIVE, tpot, e2e, sum(c.finished.output for c in completed), duration, changes)


def answers_row(answers: Sequence[Answer], duration: float, changes: int) -> Row:
    """The real engine's requests as their clients saw them (no streaming: TPOT here is E2E / tokens)."""
    tpot = [a.e2e / a.tokens for a in answers]
    e2e = [a.e2e for a in answers]
    return _row("live vLLM", tpot, e2e, sum(a.tokens for a in answers), duration, changes)


def _row(name: str, tpot: Sequence[float], e2e: Sequence[float], tokens: int, duration: float, changes: int) -> Row:
    if not len(tpot):
        return Row(name, 0, float("nan"), float("nan"), float("nan"), float("nan"), 0.0, changes)
    return Row(
        name, len(tpot), float(np.mean(tpot)), float(np.percentile(tpot, 90)), float(np.mean(e2e)),
        float(np.percentile(e2e, 90)), tokens / duration, changes,
    )  # fmt: skip


def served_tables(completed: Sequence[Completed]) -> dict[str, SpecConfig]:
    """The batch-size tables the live pods ran, by label: each is simulated as a static setting too, so that a
    change away from one is priced against keeping it."""
    return {c.config: c.spec for c in completed if c.spec.schedule}


def baselines(
    fleet: FleetSpec, trace: Trace, policy: dict[str, object], gpu: str, restart_seconds: float,
    tables: Mapping[str, SpecConfig],
) -> Evaluation:  # fmt: skip
    """The simulated runs on the live run's trace: the policy, the static settings, the candidate tables and
    `tables` (the ones the live pods ran), and the hindsight runs over them."""
    # The local fleet rolls as the operator renders the demo's resource (spec.rollout.maxSurge 1): with a surge pod.
    scenario = Scenario(
        name=fleet.name, trace=trace, gpu=gpu, replicas=fleet.replicas, method=fleet.method,
        restart_seconds=restart_seconds, dt=0.5, surge=True,
    )  # fmt: skip
    return evaluate(scenario, PolicySpec.model_validate(policy), tables={**TABLE_CANDIDATES, **tables})


# The simulated policy, the static settings a user could have pinned, the best of the candidate tables, and the
# hindsight schedule that pays for its restarts; the raw candidate tables and the free oracle would crowd it.
SHOWN = frozenset({AUTO, *BASELINES, BEST_TABLE, RESTART_ORACLE})


def rows(live: Row, evaluation: Evaluation) -> list[Row]:
    simulated = [
        Row(
            f"sim {name}",
            int(np.sum(~np.isnan(evaluation.results[name].tpot))),
            s.tpot_mean,
            s.tpot_p90,
            s.e2e_mean,
            s.e2e_p90,
            s.throughput,
            s.restarts,
        )
        for name, s in evaluation.summaries.items()
        if name in SHOWN
    ]
    return [live, *simulated]


# Units in the headers, so the cells stay short enough for 80 columns.
SUMMARY_COLUMNS = ("requests", "TPOT ms\nmean", "TPOT ms\np90", "E2E s\nmean", "E2E s\np90", "tok/s", "changes")
RUN_MIN_WIDTH = 10


def effects(timeline: Timeline, deployment: str, completed: Sequence[Completed], evaluation: Evaluation,
            duration: float) -> list[ChangeEffect]:  # fmt: skip
    """What each live change bought against keeping the static setting or the table it replaced (effects.py)."""
    static = {*BASELINES, *served_tables(completed)}
    kept: dict[str, Outcomes] = {
        name: (result.requests.arrival, result.tpot) for name, result in evaluation.results.items() if name in static
    }
    return change_effects(timeline.changes(deployment), completed, kept, duration)


def closing_lines(live: Row, table_rows: Sequence[Row], changes: Sequence[ChangeEffect]) -> list[str]:
    """Why the live row stands where it does: against the best static setting (the hindsight table included:
    one table held all run is a static setting too), then each change in turn."""
    statics = [r for r in table_rows if r.name.removeprefix("sim ") in {*BASELINES, BEST_TABLE}]
    best = min(statics, key=lambda r: r.tpot_mean)
    verdict = "at or below" if live.tpot_mean <= best.tpot_mean else "above"
    lines = [
        f"live mean TPOT {live.tpot_mean * 1e3:.2f} ms is {verdict} the best static setting "
        f"({best.name.removeprefix('sim ')}, {best.tpot_mean * 1e3:.2f} ms): {1 - live.tpot_mean / best.tpot_mean:+.1%}"
    ]
    if not changes:
        return [*lines, "the operator made no change"]
    lines.append(
        "what each change bought (live TPOT until the next change against keeping what it replaced; + is faster):"
    )
    for c in changes:
        live_ms = "no requests" if c.live_tpot is None else f"{c.live_tpot * 1e3:.2f} ms"
        if c.bought is None:
            against = f"no static baseline of {c.replaced}" if c.replaced else "nothing served before it"
        else:
            assert c.kept_tpot is not None
            against = f"{c.kept_tpot * 1e3:.2f} ms at {c.replaced} ({c.bought:+.1%})"
        lines.append(f"  {c.time:5.0f}-{c.until:.0f} s  {c.action} ({c.reason}): {live_ms} vs {against}")
    return lines


def summary_table(title: str, table_rows: Sequence[Row]) -> Table:
    """Numbers are never cut before the run names are: a narrow terminal folds the names first."""
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("run", overflow="fold", min_width=RUN_MIN_WIDTH)
    for column in SUMMARY_COLUMNS:
        table.add_column(column, justify="right", no_wrap=True)
    for row in table_rows:
        table.add_row(
            row.name, str(row.requests), f"{row.tpot_mean * 1e3:.2f}", f"{row.tpot_p90 * 1e3:.2f}",
            f"{row.e2e_mean:.2f}", f"{row.e2e_p90:.2f}", f"{row.throughput:.0f}", str(row.changes),
        )  # fmt: skip
    return table


def plot_timeline(timeline: Timeline, deployment: str, path: Path) -> None:
    """Offered load and measured concurrency; acceptance and TPOT; the mode and k, with each decision."""
    points = [p for p in timeline.points if p.deployment == deployment]
    t = [p.time for p in points]
    fig, (load_ax, signal_ax, mode_ax) = plt.subplots(3, 1, figsize=(10, 8), sharex=True)
    load_ax.plot(t, [p.offered_qps for p in points], color="tab:blue", label="offered requests/s")
    load_ax.set_ylabel("requests/s")
    running = load_ax.twinx()
    running.plot(t, [p.concurrency or np.nan for p in points], color="tab:orange", label="running per replica")
    running.set_ylabel("running per replica", color="tab:orange")
    signal_ax.plot(t, [(p.tpot_seconds or np.nan) * 1e3 for p in points], color="tab:red")
    signal_ax.set_ylabel("TPOT (ms)", color="tab:red")
    length = signal_ax.twinx()
    length.plot(t, [p.acceptance_length or np.nan for p in points], color="tab:green")
    length.set_ylabel("acceptance length L", color="tab:green")
    mode_ax.step(t, [p.k if p.enabled else 0 for p in points], where="post", lw=2, label="k (0 = off)")
    mode_ax.step(t, [p.ready for p in points], where="post", alpha=0.6, label="ready pods")
    for decision in timeline.changes(deployment):
        mode_ax.axvline(decision.time, color="grey", ls="--", lw=0.8)
        mode_ax.annotate(decision.action, (decision.time, mode_ax.get_ylim()[1]), rotation=90, va="top", fontsize=7)
    mode_ax.set_ylabel("speculation")
    mode_ax.set_xlabel("seconds since traffic started")
    mode_ax.legend(loc="lower right", fontsize=7)
    load_ax.set_title(f"{deployment}: the operator's decisions as the load crosses the crossover")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_summary(
    path: Path, table_rows: Sequence[Row], timeline: Timeline, deployment: str, changes: Sequence[ChangeEffect] = ()
) -> None:
    summary = {
        "rows": [asdict(row) for row in table_rows],
        "decisions": [asdict(d) for d in timeline.changes(deployment)],
        "changes": [{**asdict(c), "bought": c.bought} for c in changes],
    }
    path.write_text(json.dumps(summary, indent=2))
