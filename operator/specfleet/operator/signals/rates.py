"""PURE. Window statistics of a deployment's pods -> `Signals`, with the evidence behind each figure.

Non-finite values (NaN from 0/0 rates or from an exporter, Inf) are dropped per pod before aggregating, so
one broken pod does not poison a fleet's figures; a ratio with a zero denominator is left unset.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from specfleet.operator.api.types import Evidence, Signals, SignalsEvidence
from specfleet.operator.signals.model import (
    ConfigKey,
    FleetKey,
    FleetTarget,
    SignalsResult,
    Unavailable,
    WindowStats,
)


def finite(per_pod: Mapping[str, float] | None) -> dict[str, float]:
    """The pods whose value is a finite number."""
    return {pod: value for pod, value in (per_pod or {}).items() if math.isfinite(value)}


def le_bound(text: str | None) -> float | None:
    """A histogram bucket's upper bound from its `le` label, or None when it is not a number."""
    try:
        bound = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(bound) else bound


def ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator > 0 else None


def mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return sum(items) / len(items) if items else None


def quantile(q: float, values: Sequence[float]) -> float | None:
    """Prometheus' `quantile_over_time`: linear interpolation between the closest ranks."""
    if not values:
        return None
    ordered = sorted(values)
    rank = q * (len(ordered) - 1)
    lower = max(0, math.floor(rank))
    upper = min(len(ordered) - 1, lower + 1)
    weight = rank - math.floor(rank)
    return ordered[lower] * (1 - weight) + ordered[upper] * weight


def histogram_quantile(q: float, buckets: Mapping[float, float] | None) -> float | None:
    """Prometheus' `histogram_quantile` over cumulative bucket rates keyed by upper bound (`le`)."""
    points = sorted((bound, count) for bound, count in (buckets or {}).items() if math.isfinite(count))
    if len(points) < 2 or points[-1][0] != math.inf or points[-1][1] <= 0:
        return None
    # Rates of cumulative buckets can dip by float noise; Prometheus makes them monotonic the same way.
    counts = [count for _, count in points]
    for index in range(1, len(counts)):
        counts[index] = max(counts[index], counts[index - 1])
    rank = q * counts[-1]
    index = next(i for i, count in enumerate(counts) if count >= rank)
    if index == len(points) - 1:
        return points[-2][0]
    if index == 0 and points[0][0] <= 0:
        return points[0][0]
    start, previous = (0.0, 0.0) if index == 0 else (points[index - 1][0], counts[index - 1])
    end, count = points[index][0], counts[index]
    return start + (end - start) * (rank - previous) / (count - previous) if count > previous else end


def acceptance_by_position(per_position: Mapping[int, float], drafts: float) -> list[float] | None:
    """Unconditional a_i, stopping at the first missing position: a gap cannot be filled by a guess."""
    values: list[float] = []
    while len(values) in per_position and math.isfinite(per_position[len(values)]) and drafts > 0:
        values.append(per_position[len(values)] / drafts)
    return values or None


def _total(stats: WindowStats, counter: str) -> tuple[float, int] | None:
    pods = finite(stats.counters.get(counter))
    return (sum(pods.values()), len(pods)) if pods else None


def _acceptance(stats: WindowStats, window: float) -> tuple[dict[str, object], Evidence | None]:
    drafts = _total(stats, "drafts")
    if drafts is None:  # speculation off: its series do not exist
        return {}, None
    rounds, pods = drafts
    accepted = _total(stats, "accepted")
    proposed = _total(stats, "draft_tokens")
    length = ratio(accepted[0], rounds) if accepted else None
    return {
        "acceptance_length": None if length is None else 1 + length,
        "acceptance_by_position": acceptance_by_position(stats.per_position, rounds),
        "draft_acceptance_rate": ratio(accepted[0], proposed[0]) if accepted and proposed else None,
        "samples": round(rounds * window),
    }, Evidence(pods=pods, samples=rounds * window)


def _load(stats: WindowStats, window: float) -> tuple[dict[str, object], Evidence | None]:
    success = _total(stats, "success")
    running = finite(stats.gauges.get("running_mean"))
    prompt, generated = _total(stats, "prompt_tokens"), _total(stats, "generation_tokens")
    values: dict[str, object] = {
        "qps": success[0] if success else None,
        "prompt_tokens_per_output": ratio(prompt[0], generated[0]) if prompt and generated else None,
        "concurrency_per_replica": mean(running.values()),
        # The mean over pods of each pod's p90 over the window: a typical replica's busy level.
        "concurrency_p90": mean(finite(stats.gauges.get("running_p90")).values()),
        "waiting_requests": _sum_or_none(finite(stats.gauges.get("waiting_mean")).values()),
        "kv_cache_usage": mean(finite(stats.gauges.get("kv_mean")).values()),
    }
    pods = max(len(running), success[1] if success else 0)
    return values, Evidence(pods=pods, samples=(success[0] if success else 0.0) * window) if pods else None


def _latency(stats: WindowStats, window: float) -> tuple[dict[str, object], Evidence | None]:
    count = _total(stats, "tpot_count")
    total = _total(stats, "tpot_sum")
    values: dict[str, object] = {
        "tpot_seconds": ratio(total[0], count[0]) if total and count else None,
        "tpot_p50_seconds": histogram_quantile(0.5, stats.buckets.get("tpot")),
        "tpot_p90_seconds": histogram_quantile(0.9, stats.buckets.get("tpot")),
        "ttft_p90_seconds": histogram_quantile(0.9, stats.buckets.get("ttft")),
    }
    return values, Evidence(pods=count[1], samples=count[0] * window) if count else None


def _sum_or_none(values: Iterable[float]) -> float | None:
    items = list(values)
    return sum(items) if items else None


def window_pods(stats: WindowStats) -> set[str]:
    """Pods that reported any per-pod series in the window."""
    pods: set[str] = set()
    for per_pod in (*stats.counters.values(), *stats.gauges.values()):
        pods |= per_pod.keys()
    return pods


def has_finite_values(stats: WindowStats) -> bool:
    """Whether any per-pod counter or gauge of the window is a finite number."""
    per_pod = (*stats.counters.values(), *stats.gauges.values())
    return any(math.isfinite(value) for values in per_pod for value in values.values())


def to_signals(
    stats: WindowStats, window_seconds: float, config_hash: str, observed_at: str, missing: Sequence[str] = ()
) -> Signals:
    """One configuration's signals over the window."""
    acceptance, acceptance_evidence = _acceptance(stats, window_seconds)
    load, load_evidence = _load(stats, window_seconds)
    latency, latency_evidence = _latency(stats, window_seconds)
    pods = stats.pods_now if stats.pods_now is not None else window_pods(stats)
    return Signals.model_validate(
        {
            "window_seconds": window_seconds,
            "observed_at": observed_at,
            "config_hash": config_hash,
            **acceptance,
            **load,
            **latency,
            "pods": len(pods),
            "evidence": SignalsEvidence(acceptance=acceptance_evidence, load=load_evidence, latency=latency_evidence),
            "missing": sorted(missing) or None,
        }
    )


def fleet_signals(
    stats: Mapping[ConfigKey, WindowStats],
    targets: Sequence[FleetTarget],
    window_seconds: float,
    observed_at: str,
    missing: Sequence[str] = (),
) -> dict[FleetKey, SignalsResult]:
    """Each target's signals from its current configuration only, or why there are none."""
    results: dict[FleetKey, SignalsResult] = {}
    for target in targets:
        found = stats.get(target.config_key)
        if found is None or not window_pods(found):
            results[target.key] = Unavailable(
                "NoSeries",
                f"no vLLM series for config hash {target.config_hash!r} in the last {window_seconds:g}s",
            )
        elif not has_finite_values(found):
            # Rows came back but none is a number to act on: the data is broken, not a quiet fleet.
            results[target.key] = Unavailable(
                "NonFiniteValues",
                f"every value for config hash {target.config_hash!r} in the last {window_seconds:g}s is NaN or ±Inf",
            )
        else:
            results[target.key] = to_signals(found, window_seconds, target.config_hash, observed_at, missing)
    return results
