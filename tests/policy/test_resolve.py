from __future__ import annotations

from specfleet.operator.api.policy_types import Fallback, PolicySpec
from specfleet.operator.policy import defaults
from specfleet.operator.policy.resolve import ResolvedPolicy, resolve_policy


def test_defaults_when_nothing_is_set() -> None:
    policy = resolve_policy(None, None, max_k=5)
    assert policy == ResolvedPolicy(max_k=5)
    assert (policy.interval_seconds, policy.window_seconds) == (30, 120)
    assert (policy.enable_margin, policy.disable_margin) == (0.10, 0.02)
    assert (policy.dwell_seconds, policy.cooldown_seconds, policy.max_restarts_per_hour) == (120, 600, 2)
    assert (policy.restart_cost_seconds, policy.expected_dwell_seconds) == (90.0, 1800.0)
    assert policy.fallback == Fallback.HOLD
    assert policy.metrics_missing_intervals == 3
    assert (policy.collapse_acceptance_length, policy.min_samples, policy.min_pods) == (1.3, 50, 1)
    assert (policy.verification_windows, policy.rollback_tolerance) == (2, 0.15)
    assert policy.ready_deadline_seconds == 900
    assert policy.schedule is True
    assert defaults.DEFAULT_START_K == 3


def test_inline_overrides_referenced_field_by_field() -> None:
    referenced = PolicySpec(dwell_seconds=60, cooldown_seconds=300, fallback=Fallback.OFF)
    inline = PolicySpec(dwell_seconds=10)
    policy = resolve_policy(referenced, inline, max_k=5)
    assert policy.dwell_seconds == 10  # inline wins
    assert policy.cooldown_seconds == 300  # from the referenced policy
    assert policy.fallback == Fallback.OFF
    assert policy.enable_margin == defaults.ENABLE_MARGIN  # from the defaults


def test_max_k_is_capped_by_the_deployment() -> None:
    assert resolve_policy(PolicySpec(max_k=8), None, max_k=5).max_k == 5
    assert resolve_policy(PolicySpec(max_k=2), None, max_k=5).max_k == 2
    assert resolve_policy(PolicySpec(min_k=4), PolicySpec(max_k=2), max_k=5).min_k == 2


def test_mixed_sources_keep_hysteresis() -> None:
    policy = resolve_policy(PolicySpec(disable_margin=0.2), PolicySpec(enable_margin=0.15), max_k=5)
    assert policy.enable_margin == 0.15
    assert policy.disable_margin < policy.enable_margin
