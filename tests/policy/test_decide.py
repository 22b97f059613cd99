"""Decision-core scenarios: act after the dwell, verify, roll back, respect modes and pauses."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from specfleet.operator.api.policy_types import Fallback
from specfleet.operator.api.types import SpeculationMode
from specfleet.operator.policy.context import Context, initial_state
from specfleet.operator.policy.decide import decide
from specfleet.operator.policy.decision import Action, Decision, Reason
from specfleet.operator.policy.predictor import Predictor
from specfleet.operator.policy.state import PolicyState, SpecConfig
from tests.policy.helpers import make_context, make_signals, run, with_fleet

# Fixed k=3 so that speculation has a crossover (≈ bs 240 on 8B/H100) the policy must respect.
K3: dict[str, Any] = {"min_k": 3, "max_k": 3}


def applied_changes(decisions: list[Decision]) -> list[Decision]:
    return [d for d in decisions if d.restart_bound and d.applied]


def test_high_load_turns_speculation_off_after_the_dwell() -> None:
    ctx = make_context(**K3)
    decisions = run(ctx, initial_state(ctx), lambda t, s: make_signals(600, enabled=s.current.enabled))
    changes = applied_changes(decisions)
    assert [d.action for d in changes] == [Action.DISABLE]
    assert changes[0].code == Reason.LOSS
    assert decisions.index(changes[0]) * ctx.policy.interval_seconds >= ctx.policy.dwell_seconds
    assert changes[0].inputs["speedupGuarded"] < 1.02  # type: ignore[operator]


def test_low_load_turns_speculation_back_on_from_remembered_acceptance() -> None:
    ctx = make_context(**K3)
    off = replace(initial_state(ctx), current=SpecConfig.off(), last_good=SpecConfig.off())
    decisions = run(ctx, off, lambda t, s: make_signals(8, enabled=s.current.enabled))
    changes = applied_changes(decisions)
    assert [d.action for d in changes] == [Action.ENABLE]
    assert changes[0].target == SpecConfig(enabled=True, k=3)


def test_table_is_rendered_when_data_parallel_is_one() -> None:
    ctx = make_context(data_parallel_size=1)
    state = initial_state(ctx)
    assert state.current.schedule is not None
    assert state.current.k == 5
    decision = decide(0.0, make_signals(16), state, ctx)
    assert decision.action == Action.HOLD
    assert decision.code == Reason.STEADY


def test_schedule_recalibrates_when_acceptance_drifts() -> None:
    ctx = make_context(data_parallel_size=1, dwell_seconds=0, restart_cost_seconds=0)
    state = initial_state(ctx)
    better = (0.85, 0.72, 0.61)
    decisions = run(ctx, state, lambda t, s: make_signals(8, acceptance_by_position=list(better)), steps=3)
    change = next(d for d in decisions if d.action != Action.HOLD)
    assert change.action == Action.SET_SCHEDULE
    assert change.code == Reason.DRIFT
    assert change.target.schedule != state.current.schedule
    # A new table reaches the running pods live: no restart.
    assert change.live
    assert not change.restart_bound
    assert not applied_changes(decisions)


def test_paused_changes_nothing() -> None:
    ctx = make_context(paused=True, **K3)
    state = initial_state(ctx)
    decisions = run(ctx, state, lambda t, s: make_signals(600))
    assert all(d.action == Action.HOLD and not d.applied and d.code == Reason.PAUSED for d in decisions)
    assert decisions[-1].state == state


def test_recommend_reports_but_never_changes_the_configuration() -> None:
    ctx = make_context(SpeculationMode.RECOMMEND, **K3)
    state = initial_state(ctx)
    decisions = run(ctx, state, lambda t, s: make_signals(600))
    recommended = [d for d in decisions if d.action == Action.DISABLE]
    assert recommended
    assert not any(d.applied for d in decisions)
    assert all(d.state.current == state.current and d.state.restarts == () for d in decisions)


def test_mode_off_pins_off_and_on_never_disables() -> None:
    off_ctx = make_context(SpeculationMode.OFF)
    enabled = initial_state(make_context())
    decision = decide(0.0, make_signals(4), enabled, off_ctx)
    assert decision.action == Action.DISABLE
    assert decision.code == Reason.PINNED
    assert decision.applied
    on_ctx = make_context(SpeculationMode.ON, **K3)
    decisions = run(on_ctx, initial_state(on_ctx), lambda t, s: make_signals(600))
    assert all(d.action != Action.DISABLE for d in decisions)
    collapsed = run(on_ctx, initial_state(on_ctx), lambda t, s: make_signals(4, acceptance_length=1.1), steps=3)
    assert collapsed[-1].code == Reason.COLLAPSE
    assert collapsed[-1].action == Action.HOLD


def test_acceptance_collapse_turns_off_without_dwell() -> None:
    ctx = make_context()
    signals = make_signals(4, acceptance_by_position=[0.1, 0.05, 0.01], acceptance_length=1.16)
    decision = decide(0.0, signals, initial_state(ctx), ctx)
    assert decision.action == Action.DISABLE
    assert decision.code == Reason.COLLAPSE


def test_thin_evidence_holds() -> None:
    ctx = make_context(dwell_seconds=0, restart_cost_seconds=0, **K3)
    decisions = run(ctx, initial_state(ctx), lambda t, s: make_signals(600, samples=10), steps=10)
    assert all(d.action == Action.HOLD for d in decisions)
    assert decisions[-1].code == Reason.THIN_EVIDENCE


def test_fallback_off_after_missing_intervals() -> None:
    ctx = make_context(fallback=Fallback.OFF)
    decisions = run(ctx, initial_state(ctx), lambda t, s: None, steps=3)
    assert [d.action for d in decisions] == [Action.HOLD, Action.HOLD, Action.DISABLE]
    assert decisions[-1].code == Reason.METRICS_MISSING


def test_no_signals_before_any_pod_is_ready_is_not_a_metrics_fault() -> None:
    ctx = make_context(fallback=Fallback.OFF, ready=0)
    decisions = run(ctx, initial_state(ctx), lambda t, s: None, steps=10)
    assert all(d.action == Action.HOLD and d.code != Reason.METRICS_MISSING for d in decisions)
    assert decisions[-1].state.missing_intervals == 0


def changed_state(ctx_kwargs: dict[str, Any]) -> tuple[Context, PolicyState]:
    """A fleet that has just switched from k=3 (good) to k=1 at t=0."""
    ctx = make_context(dwell_seconds=0, restart_cost_seconds=0, **ctx_kwargs)
    start = decide(0.0, make_signals(600), initial_state(ctx), ctx)
    assert start.action == Action.SET_K
    assert start.state.verification is not None
    return ctx, start.state


def test_rollback_when_pods_are_not_ready_by_the_deadline() -> None:
    ctx, state = changed_state({"max_k": 5})
    unready = with_fleet(ctx, ready_replicas=1)
    decisions = run(unready, state, lambda t, s: make_signals(600), start=30, steps=40)
    rollback = next(d for d in decisions if d.action == Action.ROLLBACK)
    assert rollback.code == Reason.ROLLBACK_UNREADY
    assert rollback.target == SpecConfig(enabled=True, k=3)
    assert "not Ready" in rollback.reason
    assert rollback.state.current == rollback.state.last_good
    assert rollback.state.verification is None


def test_a_slow_but_progressing_rollout_is_not_rolled_back() -> None:
    """Four replicas each taking 300 s to load outlast a 900 s deadline without being stalled."""
    ctx, state = changed_state({"max_k": 5, "ready_deadline_seconds": 900})
    decisions = []
    for step in range(45):
        now = 30.0 + step * 30
        ready = min(4, int((now - 30) // 300))  # one more new pod Ready every 300 s
        decision = decide(now, make_signals(600), state, with_fleet(ctx, ready_replicas=ready))
        decisions.append(decision)
        state = decision.state
    assert all(d.action != Action.ROLLBACK for d in decisions)
    assert state.verification is None or state.verification.ready_at is not None


def predicted_tpot(state: PolicyState, ctx: Context, batch: float) -> float:
    v = state.verification
    assert v is not None
    return Predictor(ctx.cost, v.curve, v.calibration).tpot(state.current, batch)


def test_rollback_when_tpot_is_worse_than_predicted() -> None:
    ctx, state = changed_state({"max_k": 5})
    slow = predicted_tpot(state, ctx, 600) * 1.5
    decisions = run(ctx, state, lambda t, s: make_signals(600, tpot_seconds=slow), start=30, steps=12)
    rollback = next(d for d in decisions if d.action == Action.ROLLBACK)
    assert rollback.code == Reason.ROLLBACK_TPOT
    assert "above prediction" in rollback.reason
    assert rollback.state.current == SpecConfig(enabled=True, k=3)


def test_change_verified_when_tpot_matches() -> None:
    ctx, state = changed_state({"max_k": 5})
    good = predicted_tpot(state, ctx, 600) * 1.05
    decisions = run(ctx, state, lambda t, s: make_signals(600, tpot_seconds=good), start=30, steps=12)
    assert not any(d.action == Action.ROLLBACK for d in decisions)
    verified = next(d for d in decisions if d.code == Reason.VERIFIED)
    assert verified.state.last_good == SpecConfig(enabled=True, k=1)


def test_signals_of_another_config_are_not_used_for_verification() -> None:
    ctx, state = changed_state({"max_k": 5})
    ctx = with_fleet(ctx, config_hash="new")
    slow = predicted_tpot(state, ctx, 600) * 1.5
    stale = lambda t, s: make_signals(600, tpot_seconds=slow, config_hash="old")  # noqa: E731
    decisions = run(ctx, state, stale, start=30, steps=12)
    assert not any(d.action == Action.ROLLBACK for d in decisions)


def test_decision_record_for_status() -> None:
    ctx = make_context(**K3)
    decision = decide(0.0, make_signals(600), initial_state(ctx), ctx)
    record = decision.to_record("2025-01-01T00:00:00Z")
    assert record.action == "hold"
    assert record.k == 3
    assert record.reason.startswith("dwell: ")
    assert record.inputs["concurrency"] == 600.0
