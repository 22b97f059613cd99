"""The live terminal view: per deployment load, acceptance, TPOT, mode and k; the latest decisions and why."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from specfleet.demo.timeline import Timeline

DECISIONS_SHOWN = 6


def _fmt(value: float | None, spec: str, scale: float = 1.0) -> str:
    return "—" if value is None else format(value * scale, spec)


def render(timeline: Timeline, deployments: Sequence[str], elapsed: float, duration: float, hint: str) -> Group:
    fleet = Table(title=f"specfleet demo — {elapsed:.0f}/{duration:.0f} s", expand=True)
    for column in ("deployment", "offered req/s", "running/replica", "L", "TPOT", "mode", "ready"):
        fleet.add_column(column, justify="left" if column == "deployment" else "right")
    for name in deployments:
        p = timeline.latest(name)
        if p is None:
            continue
        mode = Text(p.mode, style="bold green" if p.enabled else "bold yellow")
        fleet.add_row(
            name, f"{p.offered_qps:.1f}", _fmt(p.concurrency, ".1f"), _fmt(p.acceptance_length, ".2f"),
            _fmt(p.tpot_seconds, ".2f", 1e3) + " ms", mode, f"{p.ready}/{p.desired}",
        )  # fmt: skip
    decisions = Table.grid(padding=(0, 1))
    for d in timeline.decisions[-DECISIONS_SHOWN:]:
        style = "bold" if d.action != "hold" else "dim"
        decisions.add_row(f"{d.time:6.1f}s", d.deployment, Text(d.action, style=style), Text(d.reason, style=style))
    return Group(fleet, Panel(decisions, title="decisions (newest last)"), Text(f"try: {hint} get sdd", style="cyan"))
