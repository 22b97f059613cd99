"""Whether a fleet's live acceptance has left what its SpeculationProfile measured. Pure.

Acceptance is a property of the draft, the target and the prompts; the profile measured it on a sample of
prompts, the fleet measures it on live traffic. Both give the acceptance of each draft position i (accepted
at i ÷ drafts), and from those the acceptance length a k reaches, L = 1 + Σ a_i. They are compared over the
positions both have seen and that every draft of the fleet's running table reaches: a table that mixes k
(say k=3 at low batch, k=1 above) drafts position 2 in only some steps, so the live a_2 is diluted by the
steps that never drafted it, while a_1 is drafted in every step that drafts at all.

The profile's own figure pools every point that drafted a position (by drafts): its concurrency does not
change what is accepted, only how fast. A gap counts as drift once it has stayed above the tolerance, without
a break, for `reprofile.afterSeconds`: one window of unusual prompts is not a new prompt distribution.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from specfleet.operator.api.profile_types import AcceptanceDrift, ProfilePoint, ReprofileSpec
from specfleet.operator.api.types import SpeculationState


@dataclass(frozen=True)
class AcceptanceGap:
    """The acceptance length over `positions` draft positions, as profiled and as live traffic shows it."""

    positions: int
    profiled: float
    live: float

    @property
    def relative(self) -> float:
        return abs(self.live - self.profiled) / self.profiled


def profiled_acceptance(points: Sequence[ProfilePoint]) -> list[float]:
    """Per-position acceptance over every point that drafted the position, pooled by drafts."""
    accepted: list[float] = []
    drafts: list[float] = []
    for point in points:
        if point.counters is None or point.counters.drafts <= 0:
            continue
        for i, count in enumerate(point.counters.accepted_by_position[: point.k]):
            if i == len(accepted):
                accepted.append(0.0)
                drafts.append(0.0)
            accepted[i] += count
            drafts[i] += point.counters.drafts
    return [a / d for a, d in zip(accepted, drafts, strict=True)]


def comparable_positions(running: SpeculationState | None) -> int:
    """How many positions every draft of the running configuration reaches (0: it does not speculate)."""
    if running is None or not running.enabled:
        return 0
    drafting = [row.k for row in running.schedule or () if row.k > 0]
    if drafting:
        return min(drafting)
    return running.k or 0


def acceptance_gap(
    points: Sequence[ProfilePoint], live_by_position: Sequence[float] | None, running: SpeculationState | None
) -> AcceptanceGap | None:
    """The profiled and the live acceptance length over the positions both know; None without a common one."""
    profiled = profiled_acceptance(points)
    positions = min(len(profiled), len(live_by_position or ()), comparable_positions(running))
    if positions == 0 or live_by_position is None:
        return None
    return AcceptanceGap(positions, 1 + sum(profiled[:positions]), 1 + sum(live_by_position[:positions]))


@dataclass(frozen=True)
class DriftStep:
    drift: AcceptanceDrift | None  # the gap still open, since when
    reprofile: bool  # it has lasted long enough: run the sweep again


def track_drift(
    previous: AcceptanceDrift | None, gap: AcceptanceGap | None, reprofile: ReprofileSpec, now: str
) -> DriftStep:
    """One evaluation of the gap: it opens, lasts (keeping when it opened), or closes; past the time it may
    last, the sweep runs again. No common position closes it: there is nothing to compare."""
    if gap is None or gap.relative <= reprofile.tolerance:
        return DriftStep(None, reprofile=False)
    since = previous.since if previous is not None else now
    drift = AcceptanceDrift(
        since=since,
        positions=gap.positions,
        profiled_acceptance_length=round(gap.profiled, 2),
        live_acceptance_length=round(gap.live, 2),
    )
    return DriftStep(drift, reprofile=_seconds(since, now) >= reprofile.after_seconds)


def recent(observed_at: str | None, now: str, max_age_seconds: float) -> bool:
    """Whether signals read at `observed_at` are recent enough to judge by."""
    return observed_at is not None and _seconds(observed_at, now) <= max_age_seconds


def _seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
