"""Window statistics -> Signals (pure)."""

from __future__ import annotations

import math

import pytest

from specfleet.operator.signals.model import FleetTarget, Unavailable, WindowStats
from specfleet.operator.signals.rates import (
    acceptance_by_position,
    fleet_signals,
    histogram_quantile,
    quantile,
    to_signals,
)

INF = math.inf


def test_histogram_quantile_interpolates_inside_the_bucket() -> None:
    # 10 requests <= 0.01 s, 20 more <= 0.05 s, 10 more <= 0.1 s: rank 20 of 40 is half-way into (0.01, 0.05].
    buckets = {0.01: 10.0, 0.05: 30.0, 0.1: 40.0, INF: 40.0}
    assert histogram_quantile(0.5, buckets) == pytest.approx(0.01 + 0.04 * (20 - 10) / 20)
    # rank 4 of 40 lies in the first bucket, which starts at 0.
    assert histogram_quantile(0.1, buckets) == pytest.approx(0.01 * 4 / 10)


def test_histogram_quantile_in_the_inf_bucket_returns_the_last_finite_bound() -> None:
    assert histogram_quantile(0.99, {0.1: 1.0, 0.2: 2.0, INF: 10.0}) == 0.2


def test_histogram_quantile_without_observations_is_unknown() -> None:
    assert histogram_quantile(0.9, {0.1: 0.0, INF: 0.0}) is None
    assert histogram_quantile(0.9, {0.1: 1.0}) is None  # no +Inf bucket
    assert histogram_quantile(0.9, None) is None


def test_quantile_matches_prometheus_quantile_over_time() -> None:
    # rank 0.9 * (5 - 1) = 3.6 -> 0.4 * 4 + 0.6 * 5 on the sorted values.
    assert quantile(0.9, [5.0, 1.0, 4.0, 2.0, 3.0]) == pytest.approx(4.6)
    assert quantile(0.5, []) is None


def test_acceptance_by_position_stops_at_the_first_gap() -> None:
    assert acceptance_by_position({0: 8.0, 1: 4.0, 3: 1.0}, 10.0) == [0.8, 0.4]
    assert acceptance_by_position({1: 4.0}, 10.0) is None
    assert acceptance_by_position({0: 4.0}, 0.0) is None


def stats_of_two_pods() -> WindowStats:
    return WindowStats(
        counters={
            "drafts": {"a": 10.0, "b": 30.0},
            "accepted": {"a": 12.0, "b": 36.0},
            "draft_tokens": {"a": 30.0, "b": 90.0},
            "success": {"a": 1.0, "b": 2.0},
            "prompt_tokens": {"a": 600.0, "b": 900.0},
            "generation_tokens": {"a": 200.0, "b": 400.0},
            "tpot_sum": {"a": 0.05, "b": 0.15},
            "tpot_count": {"a": 1.0, "b": 2.0},
        },
        per_position={0: 24.0, 1: 16.0, 2: 8.0},
        buckets={"tpot": {0.05: 1.0, 0.1: 3.0, INF: 3.0}},
        gauges={
            "running_mean": {"a": 2.0, "b": 4.0},
            "running_p90": {"a": 3.0, "b": 5.0},
            "waiting_mean": {"a": 1.0, "b": 0.5},
            "kv_mean": {"a": 0.2, "b": math.nan},
        },
        pods_now={"a", "b"},
    )


def test_signals_aggregate_pods_and_carry_their_evidence() -> None:
    signals = to_signals(stats_of_two_pods(), 60.0, "h", "2025-01-01T00:00:00Z")
    assert signals.acceptance_length == pytest.approx(1 + 48 / 40)
    assert signals.acceptance_by_position == pytest.approx([0.6, 0.4, 0.2])
    assert signals.draft_acceptance_rate == pytest.approx(48 / 120)
    assert signals.qps == pytest.approx(3.0)
    assert signals.prompt_tokens_per_output == pytest.approx(1500 / 600)  # the fleet's tokens, not a mean of pods
    assert signals.concurrency_per_replica == pytest.approx(3.0)
    assert signals.concurrency_p90 == pytest.approx(4.0)
    assert signals.waiting_requests == pytest.approx(1.5)
    assert signals.kv_cache_usage == pytest.approx(0.2)  # the NaN pod is left out, not averaged in
    assert signals.tpot_seconds == pytest.approx(0.2 / 3)
    assert signals.tpot_p50_seconds == pytest.approx(0.05 + 0.05 * (1.5 - 1) / 2)
    assert signals.pods == 2
    assert signals.samples == 40 * 60
    assert signals.evidence is not None
    assert signals.evidence.acceptance is not None
    assert (signals.evidence.acceptance.pods, signals.evidence.acceptance.samples) == (2, 2400.0)
    assert signals.evidence.latency is not None
    assert signals.evidence.latency.samples == pytest.approx(180.0)


def test_speculation_off_leaves_acceptance_unset_without_evidence() -> None:
    stats = stats_of_two_pods()
    for name in ("drafts", "accepted", "draft_tokens"):
        del stats.counters[name]
    stats.per_position = {}
    signals = to_signals(stats, 60.0, "h", "t")
    assert signals.acceptance_length is None
    assert signals.acceptance_by_position is None
    assert signals.evidence is not None
    assert signals.evidence.acceptance is None
    assert signals.qps == pytest.approx(3.0)


def test_idle_speculation_has_evidence_of_zero_rounds_and_no_ratio() -> None:
    stats = stats_of_two_pods()
    stats.counters["drafts"] = {"a": 0.0, "b": math.nan}
    signals = to_signals(stats, 60.0, "h", "t")
    assert signals.acceptance_length is None
    assert signals.evidence is not None
    assert signals.evidence.acceptance is not None
    assert (signals.evidence.acceptance.pods, signals.evidence.acceptance.samples) == (1, 0.0)


def test_pods_without_token_counters_or_tokens_leave_the_prompt_ratio_unset() -> None:
    stats = stats_of_two_pods()
    stats.counters["generation_tokens"] = {"a": 0.0, "b": 0.0}  # nothing generated in the window
    assert to_signals(stats, 60.0, "h", "t").prompt_tokens_per_output is None
    del stats.counters["prompt_tokens"]
    assert to_signals(stats, 60.0, "h", "t").prompt_tokens_per_output is None


def test_only_the_current_configuration_counts_and_absent_ones_say_why() -> None:
    old = stats_of_two_pods()
    new = WindowStats(counters={"drafts": {"c": 1.0}, "accepted": {"c": 0.5}}, pods_now={"c"})
    results = fleet_signals(
        {("ns", "d", "old"): old, ("ns", "d", "new"): new},
        [FleetTarget("ns", "d", "new"), FleetTarget("ns", "e", "x")],
        30.0,
        "t",
        missing=["bucket:ttft"],
    )
    current = results[("ns", "d")]
    assert not isinstance(current, Unavailable)
    assert current.acceptance_length == pytest.approx(1.5)
    assert current.config_hash == "new"
    assert current.pods == 1
    assert current.missing == ["bucket:ttft"]
    absent = results[("ns", "e")]
    assert isinstance(absent, Unavailable)
    assert absent.reason == "NoSeries"
