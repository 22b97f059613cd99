"""When live acceptance has left what a SpeculationProfile measured (pure, plain data)."""

from __future__ import annotations

import pytest

from specfleet.operator.api.profile_types import AcceptanceDrift, ProfilePoint, ReprofileSpec, SpecCounts, Summary
from specfleet.operator.api.types import ScheduleEntry, SpeculationState
from specfleet.operator.policy.profile_drift import (
    AcceptanceGap,
    acceptance_gap,
    comparable_positions,
    profiled_acceptance,
    recent,
    track_drift,
)

REPROFILE = ReprofileSpec(tolerance=0.2, after_seconds=3600)
ROWS = [(8, 3), (64, 1), (256, 0)]
MIXED = SpeculationState(enabled=True, k=3, schedule=[ScheduleEntry(max_batch_size=b, k=k) for b, k in ROWS])


def _point(k: int, concurrency: int, drafts: float, accepted: list[float]) -> ProfilePoint:
    counters = None if k == 0 else SpecCounts(drafts=drafts, draft_tokens=drafts * k, accepted=sum(accepted),
                                              accepted_by_position=accepted)  # fmt: skip
    return ProfilePoint(
        k=k,
        concurrency=concurrency,
        requests=8,
        output_tokens=800,
        duration_seconds=2.0,
        throughput_tokens_per_second=400.0,
        requests_per_second=4.0,
        tpot_seconds=Summary(mean=0.01),
        ttft_seconds=Summary(mean=0.05),
        counters=counters,
    )


POINTS = [
    _point(0, 1, 0, []),
    _point(1, 1, 100, [80]),
    _point(3, 1, 100, [60, 40, 20]),
    _point(3, 8, 300, [180, 120, 60]),
]


def test_the_profile_pools_each_position_over_the_points_that_drafted_it() -> None:
    # Position 1 by every speculating point (80+60+180 of 500 drafts); positions 2 and 3 by the k=3 points.
    assert profiled_acceptance(POINTS) == pytest.approx([320 / 500, 160 / 400, 80 / 400])


@pytest.mark.parametrize(
    ("running", "positions"),
    [
        (None, 0),
        (SpeculationState(enabled=False), 0),
        (SpeculationState(enabled=True, k=3), 3),
        # A table drafts position 3 only at low batch: only the position every drafting row reaches compares.
        (MIXED, 1),
    ],
)
def test_only_positions_every_draft_reaches_are_compared(running: SpeculationState | None, positions: int) -> None:
    assert comparable_positions(running) == positions


def test_the_gap_is_over_the_positions_both_know() -> None:
    gap = acceptance_gap(POINTS, [0.3, 0.2], SpeculationState(enabled=True, k=3))
    assert gap is not None
    assert gap.positions == 2
    assert gap.profiled == pytest.approx(1 + 0.64 + 0.4)
    assert gap.live == pytest.approx(1.5)
    assert acceptance_gap(POINTS, None, SpeculationState(enabled=True, k=3)) is None
    assert acceptance_gap(POINTS, [0.3], SpeculationState(enabled=False)) is None


def test_a_gap_opens_lasts_from_when_it_opened_and_runs_the_sweep_again_after_its_time() -> None:
    wide = AcceptanceGap(positions=2, profiled=2.0, live=1.5)
    opened = track_drift(None, wide, REPROFILE, "2026-01-01T00:00:00Z")
    assert opened.drift is not None
    assert (opened.drift.since, opened.reprofile) == ("2026-01-01T00:00:00Z", False)
    assert (opened.drift.profiled_acceptance_length, opened.drift.live_acceptance_length) == (2.0, 1.5)
    lasting = track_drift(opened.drift, wide, REPROFILE, "2026-01-01T00:59:59Z")
    assert lasting.drift is not None
    assert (lasting.drift.since, lasting.reprofile) == ("2026-01-01T00:00:00Z", False)
    assert track_drift(lasting.drift, wide, REPROFILE, "2026-01-01T01:00:00Z").reprofile


@pytest.mark.parametrize("gap", [AcceptanceGap(positions=2, profiled=2.0, live=1.65), None])
def test_a_gap_within_the_tolerance_or_nothing_to_compare_closes_it(gap: AcceptanceGap | None) -> None:
    previous = AcceptanceDrift(since="2026-01-01T00:00:00Z", positions=2, profiled_acceptance_length=2.0,
                               live_acceptance_length=1.2)  # fmt: skip
    step = track_drift(previous, gap, REPROFILE, "2026-01-01T05:00:00Z")
    assert (step.drift, step.reprofile) == (None, False)


def test_signals_older_than_the_limit_are_not_judged_by() -> None:
    assert recent("2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z", 300)
    assert not recent("2026-01-01T00:00:00Z", "2026-01-01T00:05:01Z", 300)
    assert not recent(None, "2026-01-01T00:05:00Z", 300)
