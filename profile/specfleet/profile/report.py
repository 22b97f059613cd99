"""PURE. The profile report: its JSON model and the terminal table.

The point and crossover models are the SpeculationProfile's API types (camelCase on the wire), so what a
profiling Job measures lands in the resource's status unchanged.
"""

from __future__ import annotations

from specfleet.operator.api.base import ApiModel
from specfleet.operator.api.profile_types import Crossover, Metric, ProfilePoint, SpecCounts, Summary

__all__ = ["Crossover", "Metric", "ProfilePoint", "ProfileReport", "SpecCounts", "Summary", "render_table"]


class ProfileReport(ApiModel):
    model: str
    requests_file: str
    distinct_requests: int
    max_tokens: int | None = None
    interrupted: bool = False
    points: list[ProfilePoint] = []
    crossovers: list[Crossover] = []
    notes: list[str] = []


_HEADER = ("k", "conc", "reqs", "tok/s", "TPOT ms mean", "p50", "p90", "TTFT ms p50", "L", "accept by position")


def render_table(report: ProfileReport) -> str:
    """The points as an aligned text table, then one line per crossover and the notes."""
    rows = [_HEADER, *(_row(point) for point in report.points)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADER))]
    lines = ["  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.extend(_crossover_line(crossover) for crossover in report.crossovers)
    if report.interrupted:
        lines.append("interrupted: the sweep stopped early; the points above are all it measured")
    lines.extend(f"note: {note}" for note in report.notes)
    return "\n".join(lines) + "\n"


def _row(point: ProfilePoint) -> tuple[str, ...]:
    positions = " ".join(f"{a:.2f}" for a in point.acceptance_by_position or [])
    return (
        str(point.k),
        str(point.concurrency),
        str(point.requests),
        f"{point.throughput_tokens_per_second:.1f}",
        _ms(point.tpot_seconds.mean),
        _ms(point.tpot_seconds.p50),
        _ms(point.tpot_seconds.p90),
        _ms(point.ttft_seconds.p50),
        "-" if point.acceptance_length is None else f"{point.acceptance_length:.2f}",
        positions or "-",
    )


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.1f}"


def _crossover_line(crossover: Crossover) -> str:
    what = "throughput" if crossover.metric == "throughput" else "TPOT"
    if crossover.bound == "aboveSweep":
        return f"crossover k={crossover.k} ({what}): above the sweep (speculation wins at every concurrency measured)"
    if crossover.bound == "belowSweep":
        return (
            f"crossover k={crossover.k} ({what}): below the sweep (k=0 wins from concurrency {crossover.concurrency:g})"
        )
    return f"crossover k={crossover.k} ({what}): concurrency ≈ {crossover.concurrency:.1f}"
