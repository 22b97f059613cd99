from __future__ import annotations

from dataclasses import replace

from specfleet.operator.api.types import Signals, SpecDecodeDeploymentStatus, SpeculationState
from specfleet.operator.policy.belief import SpeedupBelief
from specfleet.operator.policy.decision import Action, Decision, Reason
from specfleet.operator.policy.state import PolicyState, SpecConfig
from specfleet.operator.signals.model import Unavailable
from specfleet.operator.status.evaluation import (
    DECISIONS_KEPT,
    fold_evaluation,
    to_spec_config,
    to_speculation_state,
)

ON = SpecConfig(enabled=True, k=3)


def _decision(action: Action, code: Reason, target: SpecConfig, applied: bool = True) -> Decision:
    return Decision(
        action=action,
        code=code,
        reason="because",
        target=target,
        applied=applied,
        inputs={"concurrency": 4.0},
        state=PolicyState(current=target, last_good=ON),
    )


def _fold(decision: Decision, previous: SpecDecodeDeploymentStatus | None = None, signals: object = None):  # type: ignore[no-untyped-def]
    return fold_evaluation(
        previous or SpecDecodeDeploymentStatus(),
        signals if signals is not None else Signals(pods=2, samples=100, acceptance_length=2.1),  # type: ignore[arg-type]
        decision,
        "eagle3",
        "2026-01-01T00:00:00Z",
        3,
    )


def test_applied_change_is_carried_out_recorded_and_announced() -> None:
    outcome = _fold(_decision(Action.DISABLE, Reason.LOSS, SpecConfig.off()))
    assert outcome.apply is not None
    assert outcome.apply.enabled is False
    assert outcome.status.decisions[-1].action == "disable"
    assert [e.reason for e in outcome.events] == ["SpeculationDisabled"]
    assert outcome.status.policy_state["current"]["enabled"] is False
    assert outcome.status.signals is not None
    assert outcome.status.signals.acceptance_length == 2.1


def test_recommendation_changes_nothing_but_says_so_once() -> None:
    first = _fold(_decision(Action.DISABLE, Reason.LOSS, SpecConfig.off(), applied=False))
    assert first.apply is None
    assert [e.reason for e in first.events] == ["Recommendation"]
    again = _fold(_decision(Action.DISABLE, Reason.LOSS, SpecConfig.off(), applied=False), first.status)
    assert again.events == []


def _recommended(decision: Decision, previous: SpecDecodeDeploymentStatus, reason: str = "because"):  # type: ignore[no-untyped-def]
    return _fold(replace(decision, reason=reason), previous)


def test_recommend_mode_announces_an_advice_once_whatever_its_figures() -> None:
    disable = _decision(Action.DISABLE, Reason.LOSS, SpecConfig.off(), applied=False)
    status = SpecDecodeDeploymentStatus()
    posted = []
    for speedup in ("0.91", "0.93", "0.90"):  # the reason's figures move every evaluation
        outcome = _recommended(disable, status, f"S=({speedup}) < 1.02")
        posted += outcome.events
        status = outcome.status
    assert [(e.reason, e.message) for e in posted] == [("Recommendation", "would disable → off: loss: S=(0.91) < 1.02")]
    assert status.recommendation is not None
    assert (status.recommendation.action, status.recommendation.target) == ("disable", "off")
    assert status.recommendation.since == "2026-01-01T00:00:00Z"
    retune = _decision(Action.SET_K, Reason.GAIN, SpecConfig(enabled=True, k=2), applied=False)
    outcome = _recommended(retune, status)
    assert [e.message for e in outcome.events] == ["would set-k → k=2: gain: because"]


def test_a_gated_or_blind_hold_keeps_the_advice_an_informed_one_withdraws_it() -> None:
    status = _fold(_decision(Action.DISABLE, Reason.LOSS, SpecConfig.off(), applied=False)).status
    dwell = replace(_decision(Action.HOLD, Reason.DWELL, ON, applied=False), wants="disable to off")
    for hold in (dwell, _decision(Action.HOLD, Reason.METRICS_MISSING, ON, applied=False)):
        outcome = _fold(hold, status)
        assert outcome.status.recommendation == status.recommendation
        assert outcome.events == []
    steady = _fold(_decision(Action.HOLD, Reason.STEADY, ON, applied=False), status)
    assert steady.status.recommendation is None
    again = _fold(_decision(Action.DISABLE, Reason.LOSS, SpecConfig.off(), applied=False), steady.status)
    assert [e.reason for e in again.events] == ["Recommendation"]


def test_leaving_recommend_mode_clears_the_advice() -> None:
    status = _fold(_decision(Action.DISABLE, Reason.LOSS, SpecConfig.off(), applied=False)).status
    assert _fold(_decision(Action.HOLD, Reason.STEADY, ON), status).status.recommendation is None


def test_status_shows_the_printed_figures_rounded_the_rest_as_measured() -> None:
    measured = Signals(acceptance_length=1.5935334829745018, qps=12.345678, tpot_seconds=0.0123456)
    signals = _fold(_decision(Action.HOLD, Reason.STEADY, ON), signals=measured).status.signals
    assert signals is not None
    assert (signals.acceptance_length, signals.qps, signals.tpot_seconds) == (1.59, 12.35, 0.0123456)


def test_repeated_holds_do_not_flood_history() -> None:
    status = SpecDecodeDeploymentStatus()
    for _ in range(5):
        status = _fold(_decision(Action.HOLD, Reason.STEADY, ON), status).status
    assert len(status.decisions) == 1
    status = _fold(_decision(Action.HOLD, Reason.DWELL, ON), status).status
    assert len(status.decisions) == 2


def test_a_hold_that_holds_back_another_change_is_a_new_entry() -> None:
    status = SpecDecodeDeploymentStatus()
    held_back = ("set-k to k=2", "set-k to k=2", "disable to off", "disable to off", None)
    for wants in held_back:
        decision = replace(_decision(Action.HOLD, Reason.DWELL, ON), wants=wants)
        status = _fold(decision, status).status
    assert [d.wants for d in status.decisions] == ["set-k to k=2", "disable to off", None]


def test_history_is_bounded() -> None:
    status = SpecDecodeDeploymentStatus()
    for i in range(DECISIONS_KEPT + 5):
        target = SpecConfig(enabled=True, k=1 + i % 3)
        status = _fold(_decision(Action.SET_K, Reason.GAIN, target), status).status
    assert len(status.decisions) == DECISIONS_KEPT


def test_unavailable_metrics_set_the_condition_with_the_reason() -> None:
    outcome = _fold(
        _decision(Action.HOLD, Reason.METRICS_MISSING, ON),
        signals=Unavailable("PrometheusUnreachable", "connection refused"),
    )
    condition = next(c for c in outcome.status.conditions if c.type == "MetricsAvailable")
    assert (condition.status, condition.reason) == ("False", "PrometheusUnreachable")
    assert condition.message == "connection refused"


def test_a_failed_read_says_how_old_the_signals_still_in_status_are() -> None:
    kept = SpecDecodeDeploymentStatus(signals=Signals(observed_at="2025-12-31T23:58:25Z", pods=2))
    outcome = _fold(
        _decision(Action.HOLD, Reason.METRICS_MISSING, ON),
        kept,
        signals=Unavailable("PrometheusUnreachable", "Prometheus did not answer within 21 s"),
    )
    condition = next(c for c in outcome.status.conditions if c.type == "MetricsAvailable")
    assert condition.message == (
        "Prometheus did not answer within 21 s; status.signals are stale: 95 s old (observed 2025-12-31T23:58:25Z)"
    )
    assert outcome.status.signals == kept.signals  # kept, and marked as old, not replaced


def test_state_conversions_round_trip() -> None:
    table = SpecConfig(enabled=True, k=5, schedule=((16, 5), (64, 3), (128, 0)))
    for config in (SpecConfig.off(), ON, table):
        state = to_speculation_state(config, "eagle3", "r", "t")
        assert isinstance(state, SpeculationState)
        assert to_spec_config(state) == config


def test_status_shows_what_the_fit_believed_rounded_and_nothing_without_an_evaluation() -> None:
    belief = (SpeedupBelief(k=3, batch=1, speedup=1.912345, std=0.061234), SpeedupBelief(3, 256, 0.87654, 0.1))
    decision = replace(_decision(Action.HOLD, Reason.STEADY, ON), belief=belief)
    shown = _fold(decision).status.speedup_belief
    assert [(e.k, e.batch, e.speedup, e.std) for e in shown] == [(3, 1, 1.912, 0.061), (3, 256, 0.877, 0.1)]
    assert _fold(_decision(Action.HOLD, Reason.PAUSED, ON)).status.speedup_belief is None
