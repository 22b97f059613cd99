"""PURE. One point's statistics: per-request timings as the client saw them, the engine's counters over the point.

Timings are seconds on one monotonic clock. TPOT is per request, (last token - first token) / (tokens - 1),
vLLM's own definition; a request with one token has none. The engine's counters come from two `/metrics`
snapshots bracketing the point (signals/snapshot.py does the counter arithmetic, resets included).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specfleet.operator.signals.model import WindowStats
from specfleet.operator.signals.rates import acceptance_by_position, mean, quantile
from specfleet.operator.signals.snapshot import Snapshot, add_pod
from specfleet.profile.plan import Point
from specfleet.profile.report import ProfilePoint, SpecCounts, Summary

_ENGINE = "engine"


@dataclass(frozen=True)
class RequestTiming:
    sent: float
    first_token: float
    last_token: float
    finished: float  # the answer complete (its last chunk, the usage, read)
    tokens: int

    @property
    def tpot(self) -> float | None:
        return (self.last_token - self.first_token) / (self.tokens - 1) if self.tokens > 1 else None


def summary(values: Sequence[float]) -> Summary:
    return Summary(mean=mean(values), p50=quantile(0.5, values), p90=quantile(0.9, values))


def spec_counts(before: Snapshot, after: Snapshot) -> SpecCounts | None:
    """Increase of the speculation counters between the snapshots; None when the engine has none (k=0)."""
    stats = WindowStats()
    add_pod(stats, _ENGINE, [before, after])
    span = after.time - before.time

    def increase(counter: str) -> float | None:
        rate = stats.counters.get(counter, {}).get(_ENGINE)
        return None if rate is None else rate * span

    drafts = increase("drafts")
    if drafts is None:
        return None
    positions = acceptance_by_position(stats.per_position, 1.0) or []
    return SpecCounts(
        drafts=drafts,
        draft_tokens=increase("draft_tokens") or 0.0,
        accepted=increase("accepted") or 0.0,
        accepted_by_position=[rate * span for rate in positions],
    )


def point_result(point: Point, timings: Sequence[RequestTiming], before: Snapshot, after: Snapshot) -> ProfilePoint:
    """The point's report row; throughput over the client's interval, first request sent to last answer."""
    start = min(timing.sent for timing in timings)
    duration = max(timing.finished for timing in timings) - start
    tokens = sum(timing.tokens for timing in timings)
    counts = spec_counts(before, after)
    drafts = counts.drafts if counts else 0.0
    length = 1 + counts.accepted / drafts if counts and drafts > 0 else None
    tpot = summary([t for timing in timings if (t := timing.tpot) is not None])
    return ProfilePoint(
        k=point.config.k,
        concurrency=point.concurrency,
        requests=len(timings),
        output_tokens=tokens,
        duration_seconds=duration,
        throughput_tokens_per_second=tokens / duration if duration > 0 else 0.0,
        requests_per_second=len(timings) / duration if duration > 0 else 0.0,
        tpot_seconds=tpot,
        ttft_seconds=summary([timing.first_token - timing.sent for timing in timings]),
        acceptance_length=length,
        acceptance_by_position=[a / drafts for a in counts.accepted_by_position] if counts and drafts > 0 else None,
        counters=counts,
        step_seconds=None if tpot.mean is None else tpot.mean * (length or 1.0),
    )
