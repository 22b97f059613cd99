"""PURE. Window statistics from successive `/metrics` snapshots of pods, computed in process.

This is what Prometheus' `rate`, `avg_over_time` and `quantile_over_time` do, for the direct-scrape
reader: counter increases are summed snapshot to snapshot, so a counter that drops (the pod restarted) adds
its new value instead of going negative.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from specfleet.operator.signals.model import (
    COUNTERS,
    GAUGE_STATS,
    GAUGES,
    HISTOGRAMS,
    PER_POSITION,
    VLLM_PREFIXES,
    WindowStats,
)
from specfleet.operator.signals.rates import le_bound, mean, quantile

SeriesKey = tuple[str, frozenset[tuple[str, str]]]


@dataclass(frozen=True)
class Sample:
    """One exposed sample, its name already stripped of the `vllm:` / `vllm_` prefix."""

    name: str
    labels: Mapping[str, str]
    value: float

    @cached_property
    def series(self) -> SeriesKey:
        """The series this sample belongs to: a snapshot is read once per evaluation while it is in the window."""
        return self.name, frozenset(self.labels.items())


@dataclass(frozen=True)
class Snapshot:
    """One scrape of one pod."""

    time: float
    samples: tuple[Sample, ...]


def vllm_metric(name: str) -> str | None:
    """The metric name without its vLLM prefix (either spelling), or None for other metrics."""
    for prefix in VLLM_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return None


def counter_increase(values: Sequence[float]) -> float:
    """Increase over successive readings of one counter, across resets."""
    return sum(now - before if now >= before else now for before, now in itertools.pairwise(values))


def series_rates(history: Sequence[Snapshot], metrics: frozenset[str]) -> dict[SeriesKey, float]:
    """Per-second rate of each counter series seen in at least two snapshots."""
    readings: dict[SeriesKey, list[tuple[float, float]]] = defaultdict(list)
    for snapshot in history:
        for sample in snapshot.samples:
            if sample.name in metrics:
                readings[sample.series].append((snapshot.time, sample.value))
    rates = {}
    for key, points in readings.items():
        span = points[-1][0] - points[0][0]
        if len(points) >= 2 and span > 0:
            rates[key] = counter_increase([value for _, value in points]) / span
    return rates


def _sum_by(rates: Mapping[SeriesKey, float], metric: str, label: str | None = None) -> dict[str, float]:
    """Rates of one metric summed over its series, per value of `label` ('' when not grouping)."""
    sums: dict[str, float] = defaultdict(float)
    for (name, labels), rate in rates.items():
        if name == metric:
            sums[dict(labels).get(label, "") if label else ""] += rate
    return dict(sums)


def gauge_series(history: Sequence[Snapshot], metric: str) -> list[float]:
    """A pod's gauge per snapshot, summed over its series (engines), in snapshots that have it."""
    values = []
    for snapshot in history:
        readings = [sample.value for sample in snapshot.samples if sample.name == metric]
        if readings:
            values.append(sum(readings))
    return values


_COUNTER_METRICS = frozenset([*COUNTERS.values(), PER_POSITION, *HISTOGRAMS.values()])


def add_pod(stats: WindowStats, pod: str, history: Sequence[Snapshot]) -> None:
    """Fold one pod's snapshots inside the window into its deployment's statistics."""
    rates = series_rates(history, _COUNTER_METRICS)
    for name, metric in COUNTERS.items():
        per_pod = _sum_by(rates, metric)
        if per_pod:
            stats.counters.setdefault(name, {})[pod] = per_pod[""]
    for position, rate in _sum_by(rates, PER_POSITION, "position").items():
        if position.isdigit():
            stats.per_position[int(position)] = stats.per_position.get(int(position), 0.0) + rate
    for name, metric in HISTOGRAMS.items():
        for label, rate in _sum_by(rates, metric, "le").items():
            bound = le_bound(label)
            if bound is not None:
                histogram = stats.buckets.setdefault(name, {})
                histogram[bound] = histogram.get(bound, 0.0) + rate
    for stat, gauge, q in GAUGE_STATS:
        values = gauge_series(history, GAUGES[gauge])
        value = mean(values) if q is None else quantile(q, values)
        if value is not None:
            stats.gauges.setdefault(stat, {})[pod] = value
