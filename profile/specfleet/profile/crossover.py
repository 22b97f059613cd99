"""PURE. The crossover concurrency per k: where speculation with k stops beating k=0.

At each concurrency measured for both, the advantage of k over k=0 is throughput_k / throughput_0 - 1
(throughput) or TPOT_0 / TPOT_k - 1 (mean TPOT). The crossover is the first concurrency where the advantage
reaches 0, interpolated linearly in log(concurrency) from the last concurrency where k still won (a sweep is
usually geometric: 1, 2, 4, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from specfleet.profile.report import Crossover, Metric, ProfilePoint

BASELINE_K = 0

_ADVANTAGE: dict[Metric, Callable[[ProfilePoint, ProfilePoint], float | None]] = {
    "throughput": lambda spec, base: (
        spec.throughput_tokens_per_second / base.throughput_tokens_per_second - 1
        if base.throughput_tokens_per_second > 0
        else None
    ),
    "tpot": lambda spec, base: (
        base.tpot_seconds.mean / spec.tpot_seconds.mean - 1
        if base.tpot_seconds.mean is not None and spec.tpot_seconds.mean
        else None
    ),
}


def crossovers(points: Sequence[ProfilePoint]) -> list[Crossover]:
    """One crossover per speculating k and metric; none without k=0 points to compare with."""
    baseline = {point.concurrency: point for point in points if point.k == BASELINE_K}
    ks = sorted({point.k for point in points} - {BASELINE_K})
    found = []
    for k in ks:
        for metric, advantage in _ADVANTAGE.items():
            curve = [
                (point.concurrency, value)
                for point in sorted(points, key=lambda p: p.concurrency)
                if point.k == k and point.concurrency in baseline
                if (value := advantage(point, baseline[point.concurrency])) is not None
            ]
            if curve:
                found.append(crossing(k, metric, curve))
    return found


def crossing(k: int, metric: Metric, curve: Sequence[tuple[int, float]]) -> Crossover:
    """The first zero of the advantage along (concurrency, advantage), ascending in concurrency."""
    for index, (concurrency, value) in enumerate(curve):
        if value > 0:
            continue
        if index == 0:
            return Crossover(k=k, metric=metric, bound="belowSweep", concurrency=concurrency)
        before, ahead = curve[index - 1]
        share = ahead / (ahead - value)  # in (0, 1]: ahead > 0 >= value
        where = math.exp(math.log(before) + share * (math.log(concurrency) - math.log(before)))
        return Crossover(k=k, metric=metric, bound="within", concurrency=where)
    return Crossover(k=k, metric=metric, bound="aboveSweep")
