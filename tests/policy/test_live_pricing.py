"""How the policy prices a change: a new table on the running pods (live) at about nothing, a restart at its cost."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from specfleet.operator.policy.context import initial_state
from specfleet.operator.policy.decide import decide
from specfleet.operator.policy.decision import Action, Reason
from specfleet.operator.policy.proposal import is_live
from specfleet.operator.policy.state import SpecConfig, Verification
from tests.policy.helpers import make_context, make_signals, run

# Measured acceptance well above the EAGLE prior the first table was rendered from: the table drifted.
BETTER = [0.85, 0.72, 0.61]
# Restarts made as dear and as rare as the policy allows: a live change must not care.
DEAR: dict[str, Any] = {
    "dwell_seconds": 3600,
    "cooldown_seconds": 3600,
    "restart_cost_seconds": 3600,
    "max_restarts_per_hour": 1,
}


def test_only_a_table_to_table_change_is_live() -> None:
    table = SpecConfig(enabled=True, k=5, schedule=((4, 5), (512, 1)))
    other = SpecConfig(enabled=True, k=3, schedule=((8, 3), (512, 0)))
    assert is_live(table, other, live_tables=True)
    assert not is_live(table, other, live_tables=False)
    assert not is_live(table, SpecConfig.off(), live_tables=True)
    assert not is_live(SpecConfig.off(), table, live_tables=True)
    assert not is_live(SpecConfig(enabled=True, k=3), table, live_tables=True)
    assert not is_live(table, SpecConfig(enabled=True, k=3), live_tables=True)


def test_a_drifted_table_changes_live_at_once_whatever_a_restart_would_cost() -> None:
    ctx = make_context(data_parallel_size=1, **DEAR)
    state = initial_state(ctx)
    decision = decide(0.0, make_signals(8, acceptance_by_position=BETTER), state, ctx)
    assert (decision.action, decision.code) == (Action.SET_SCHEDULE, Reason.DRIFT)
    assert decision.applied
    assert decision.live
    assert not decision.restart_bound
    assert decision.reason.endswith("(live)")
    assert decision.inputs["change"] == "live"
    assert decision.inputs["switchCost"] == 0.0
    # No restart counted, no cooldown started, nothing to verify; the table follows the measured curve.
    after = decision.state
    assert after.current == decision.target != state.current
    assert (after.restarts, after.last_change_at, after.verification) == ((), None, None)
    assert after.table_curve is not None
    assert after.table_curve[:3] == tuple(BETTER)


def test_a_restart_is_priced_at_its_rollout_and_says_so() -> None:
    ctx = make_context(min_k=3, max_k=3, dwell_seconds=0, restart_cost_seconds=90)
    off = SpecConfig.off()
    decision = decide(0.0, make_signals(64), replace(initial_state(ctx), current=off, last_good=off), ctx)
    assert decision.action == Action.ENABLE
    assert decision.restart_bound
    assert not decision.live
    assert "(restart)" in decision.reason
    assert decision.inputs["change"] == "restart"
    cost, gain, low = (decision.inputs[key] for key in ("switchCost", "gain", "gainLow"))
    assert isinstance(cost, float)
    assert isinstance(gain, float)
    assert isinstance(low, float)
    assert 0 < cost < low * 1800 < gain * 1800  # the gain's lower bound over the expected dwell pays for it
    # The reason says the figures the change was judged on.
    said = re.search(r"gain (\d+), at least (\d+) s of TPOT > restart cost (\d+) s", decision.reason)
    assert said is not None, decision.reason
    assert [float(v) for v in said.groups()] == pytest.approx([gain * 1800, low * 1800, cost], abs=1)
    assert decision.state.restarts == (0.0,)


def test_the_same_restart_is_held_back_when_its_cost_exceeds_the_gain() -> None:
    ctx = make_context(min_k=3, max_k=3, dwell_seconds=0, restart_cost_seconds=3600, expected_dwell_seconds=60)
    decision = decide(0.0, make_signals(600), initial_state(ctx), ctx)
    assert (decision.action, decision.code) == (Action.HOLD, Reason.SWITCHING_COST)
    assert decision.wants == "disable to off"
    assert decision.inputs["change"] == "restart"
    assert decision.inputs["switchCost"] > decision.inputs["gain"] * 60  # type: ignore[operator]


def test_a_live_change_too_small_to_matter_is_held_by_the_hysteresis() -> None:
    ctx = make_context(data_parallel_size=1)
    best = decide(0.0, make_signals(8, acceptance_by_position=BETTER), initial_state(ctx), ctx).target
    assert best.schedule is not None
    # The running table differs from the best one only between the batch sizes the table is judged at.
    (first, k), *rest = best.schedule
    running = replace(best, schedule=((first, k), (first + 2, k - 2), *rest))
    state = replace(initial_state(ctx), current=running, last_good=running, table_curve=None)
    decision = decide(0.0, make_signals(8, acceptance_by_position=BETTER), state, ctx)
    assert (decision.action, decision.code) == (Action.HOLD, Reason.HYSTERESIS)
    assert decision.inputs["change"] == "live"
    assert decision.state.current == running


def test_a_live_change_waits_for_the_last_restarts_verification() -> None:
    ctx = make_context(data_parallel_size=1)
    state = initial_state(ctx)
    verifying = replace(state, verification=Verification(since=0.0, curve=(0.5,), calibration=state.calibration))
    decision = decide(10.0, make_signals(8, acceptance_by_position=BETTER), verifying, ctx)
    assert decision.action == Action.HOLD
    assert decision.code in (Reason.VERIFYING, Reason.VERIFIED)
    assert decision.state.current == state.current


def test_constant_signals_change_the_table_once_and_never_restart() -> None:
    ctx = make_context(data_parallel_size=1, dwell_seconds=0, cooldown_seconds=0)
    decisions = run(ctx, initial_state(ctx), lambda t, s: make_signals(8, acceptance_by_position=BETTER), steps=40)
    changes = [d for d in decisions if d.action != Action.HOLD]
    assert [d.action for d in changes] == [Action.SET_SCHEDULE]
    assert all(d.live for d in changes)
    assert decisions[-1].state.restarts == ()


def test_a_table_the_fit_has_outgrown_is_replaced_live_for_a_gain_at_the_running_load() -> None:
    """Acceptance has not moved since the table was rendered, but the table no longer is what the fit renders:
    it is replaced live when that pays at the load running now, and kept when it would pay only elsewhere."""
    ctx = make_context(data_parallel_size=1, **DEAR)
    signals = make_signals(8, acceptance_by_position=BETTER)
    rendered = decide(0.0, signals, initial_state(ctx), ctx).state
    assert rendered.current.schedule is not None
    # k=1 at every load: far below what the fit gives at 8 sequences.
    stale = replace(rendered, current=replace(rendered.current, schedule=((8, 1), (512, 1))))
    decision = decide(30.0, signals, stale, ctx)
    assert (decision.action, decision.code) == (Action.SET_SCHEDULE, Reason.GAIN)
    assert decision.live
    assert decision.reason.startswith("the cost fit moved")
    # Rows the fit surely improves at their sizes take its k (the running load's among them); the others keep 1.
    assert decision.target.k_at(8) == rendered.current.k_at(8) > 1
    # The same table except far above the running load: no gain at B̂, so no change.
    rows = rendered.current.schedule
    elsewhere = replace(rendered, current=replace(rendered.current, schedule=(*rows[:-1], (rows[-1][0], 0))))
    assert elsewhere.current != rendered.current
    assert rows[-2][0] >= 8  # the row changed starts above the running load
    kept = decide(30.0, signals, elsewhere, ctx)
    assert (kept.action, kept.code) == (Action.HOLD, Reason.STEADY)
