"""Hypothesis properties of the decision core: stability, monotonicity, cooldown, budget, fallback."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from specfleet.operator.api.types import Signals
from specfleet.operator.policy.context import initial_state
from specfleet.operator.policy.decide import decide
from specfleet.operator.policy.decision import Action, Decision, Reason
from specfleet.operator.policy.state import HOUR_S, PolicyState, SpecConfig
from tests.policy.helpers import make_context, make_signals, run, with_fleet

SETTINGS = settings(max_examples=40, deadline=None)
first = st.floats(0.3, 0.9)
conditional = st.floats(0.3, 0.95)
batches = st.floats(1, 1024)
k_bounds = st.sampled_from([{"min_k": 3, "max_k": 3}, {"min_k": 1, "max_k": 5}, {"min_k": 1, "max_k": 2}])


def curve(a1: float, c: float) -> list[float]:
    return [a1, a1 * c, a1 * c * c]


def acceptance(a1: float, c: float) -> dict[str, Any]:
    values = curve(a1, c)
    return {"acceptance_by_position": values, "acceptance_length": 1 + sum(values)}


def fresh(enabled: bool, k: int = 3) -> PolicyState:
    config = SpecConfig(enabled=True, k=k) if enabled else SpecConfig.off()
    return PolicyState(current=config, last_good=config)


def one_step_ctx(bounds: dict[str, Any]) -> Any:
    """Act on the first evaluation: no dwell, no switching cost."""
    return make_context(dwell_seconds=0, restart_cost_seconds=0, **bounds)


def changes(decisions: list[Decision]) -> list[tuple[float, Decision]]:
    out = []
    for decision in decisions:
        if decision.restart_bound and decision.applied:
            out.append((decision.state.last_change_at or 0.0, decision))
    return out


@SETTINGS
@given(batch=batches, a1=first, c=conditional, enabled=st.booleans(), bounds=k_bounds)
def test_constant_signals_are_stable(batch: float, a1: float, c: float, enabled: bool, bounds: dict[str, Any]) -> None:
    ctx = make_context(**bounds)
    start = fresh(enabled, ctx.policy.clamp_k(3))
    decisions = run(ctx, start, lambda t, s: make_signals(batch, enabled=s.current.enabled, **acceptance(a1, c)))
    made = changes(decisions)
    assert len(made) <= 1, [(t, d.action, d.reason) for t, d in made]


@SETTINGS
@given(low=batches, high=batches, a1=first, c=conditional, bounds=k_bounds)
def test_more_load_never_turns_speculation_on(
    low: float, high: float, a1: float, c: float, bounds: dict[str, Any]
) -> None:
    low, high = sorted((low, high))
    ctx = one_step_ctx(bounds)
    memory = replace(fresh(False), acceptance=None)
    ctx_prior = replace(ctx, method="eagle3")
    at = {b: decide(0.0, make_signals(b, enabled=False), memory, ctx_prior) for b in (low, high)}
    if at[high].action == Action.ENABLE:
        assert at[low].action == Action.ENABLE
    # The same holds for the speed-up the thresholds are applied to, for any acceptance.
    predictor = decide(0.0, make_signals(low, **acceptance(a1, c)), fresh(True), ctx).inputs
    predictor_high = decide(0.0, make_signals(high, **acceptance(a1, c)), fresh(True), ctx).inputs
    assert predictor_high["speedupGuarded"] <= predictor["speedupGuarded"]  # type: ignore[operator]


@SETTINGS
@given(batch=batches, a1=first, c=conditional, lift=st.floats(0, 0.5), bounds=k_bounds)
def test_higher_acceptance_never_turns_speculation_off(
    batch: float, a1: float, c: float, lift: float, bounds: dict[str, Any]
) -> None:
    ctx = one_step_ctx(bounds)
    start = fresh(True, ctx.policy.clamp_k(3))
    a1_high, c_high = min(a1 + lift, 0.95), min(c + lift, 0.99)
    low = decide(0.0, make_signals(batch, **acceptance(a1, c)), start, ctx)
    high = decide(0.0, make_signals(batch, **acceptance(a1_high, c_high)), start, ctx)
    if high.action == Action.DISABLE:
        assert low.action == Action.DISABLE


@SETTINGS
@given(
    noise=st.lists(st.floats(-120, 120), min_size=80, max_size=80),
    centre=st.floats(200, 300),
    dwell=st.sampled_from([0, 30, 120]),
)
def test_noise_around_the_threshold_changes_at_most_once_per_cooldown(
    noise: list[float], centre: float, dwell: int
) -> None:
    ctx = make_context(min_k=3, max_k=3, dwell_seconds=dwell, restart_cost_seconds=0, max_restarts_per_hour=60)
    series = [max(centre + n, 1.0) for n in noise]
    step = ctx.policy.interval_seconds

    def signals_at(t: float, s: PolicyState) -> Signals:
        return make_signals(series[int(t // step)], enabled=s.current.enabled)

    made = [t for t, d in changes(run(ctx, initial_state(ctx), signals_at, steps=len(series)))]
    assert all(b - a >= ctx.policy.cooldown_seconds for a, b in itertools.pairwise(made))


@settings(max_examples=25, deadline=None)
@given(
    budget=st.integers(0, 4),
    script=st.lists(
        st.tuples(st.floats(1, 1024), st.booleans(), st.floats(0.5, 2.0), st.booleans()),
        min_size=40,
        max_size=40,
    ),
)
def test_the_restart_budget_is_never_exceeded(budget: int, script: list[tuple[float, bool, float, bool]]) -> None:
    base = make_context(
        dwell_seconds=0,
        cooldown_seconds=0,
        restart_cost_seconds=0,
        max_restarts_per_hour=budget,
        ready_deadline_seconds=60,
    )
    state = initial_state(base)
    made: list[float] = []
    for i, (batch, present, tpot_scale, ready) in enumerate(script):
        now = i * 30.0
        ctx = with_fleet(base, ready_replicas=base.fleet.replicas if ready else 0)
        signals = make_signals(batch, tpot_seconds=0.01 * tpot_scale) if present else None
        decision = decide(now, signals, state, ctx)
        state = decision.state
        if decision.restart_bound and decision.applied:
            made.append(now)
            assert sum(1 for t in made if now - t < HOUR_S) <= budget


@SETTINGS
@given(
    prefix=st.lists(batches, max_size=10),
    missing=st.integers(1, 6),
    fallback=st.sampled_from(["Hold", "Off"]),
    enabled=st.booleans(),
)
def test_fallback_triggers_when_signals_vanish(prefix: list[float], missing: int, fallback: str, enabled: bool) -> None:
    ctx = make_context(metrics_missing_intervals=missing, fallback=fallback)
    state = fresh(enabled)
    now = 0.0
    for batch in prefix:
        state = decide(now, make_signals(batch, enabled=state.current.enabled), state, ctx).state
        now += 30
    for _ in range(missing):
        decision = decide(now, None, state, ctx)
        state, now = decision.state, now + 30
    assert decision.code == Reason.METRICS_MISSING or "no signals" in decision.reason
    if fallback == "Off" and decision.applied and decision.restart_bound:
        assert decision.action == Action.DISABLE
        assert not decision.target.enabled
