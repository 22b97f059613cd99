"""Fold one policy evaluation into a fleet's status: signals, decisions, conditions, Events. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from specfleet.operator.api.types import Decision as DecisionRecord
from specfleet.operator.api.types import (
    Recommendation,
    ScheduleEntry,
    Signals,
    SpecDecodeDeploymentStatus,
    SpeculationState,
    SpeedupEstimate,
)
from specfleet.operator.policy.decision import Action, Decision, Reason
from specfleet.operator.policy.state import SpecConfig
from specfleet.operator.signals.model import Unavailable
from specfleet.operator.status.conditions import set_condition
from specfleet.operator.status.fleet import METRICS_AVAILABLE

DECISIONS_KEPT = 20
# The figures `kubectl get` prints are kept to two decimals in status; the policy decided on the full values.
SHOWN_DECIMALS = 2
SHOWN_SIGNALS = ("acceptance_length", "qps")
# Holds that say nothing about the advice (no look at the fleet, or no data): a standing recommendation stays.
UNINFORMED_HOLDS = frozenset({Reason.PAUSED, Reason.METRICS_MISSING, Reason.NO_FORECAST})

EVENT_REASONS = {
    Action.ENABLE: "SpeculationEnabled",
    Action.DISABLE: "SpeculationDisabled",
    Action.SET_K: "SpeculationRetuned",
    Action.SET_SCHEDULE: "ScheduleRetuned",
    Action.ROLLBACK: "RolledBack",
}


@dataclass
class Note:
    """An Event to post: type, CamelCase reason, message."""

    type: str
    reason: str
    message: str


@dataclass
class Evaluation:
    status: SpecDecodeDeploymentStatus
    # The configuration the pods must run now; None when nothing changes.
    apply: SpeculationState | None = None
    events: list[Note] = field(default_factory=list)


def to_speculation_state(config: SpecConfig, method: str, reason: str, since: str) -> SpeculationState:
    if not config.enabled:
        return SpeculationState(enabled=False, reason=reason, since=since)
    schedule = [ScheduleEntry(max_batch_size=batch, k=k) for batch, k in config.schedule] if config.schedule else None
    return SpeculationState(enabled=True, method=method, k=config.k, schedule=schedule, reason=reason, since=since)


def to_spec_config(state: SpeculationState) -> SpecConfig:
    if not state.enabled:
        return SpecConfig.off()
    schedule = tuple((row.max_batch_size, row.k) for row in state.schedule) if state.schedule else None
    return SpecConfig(enabled=True, k=state.k or 1, schedule=schedule)


def _repeats(last: DecisionRecord | None, record: DecisionRecord) -> bool:
    """Whether `record` is the same hold as `last`: same reason code, same configuration, same change held back.

    Such a hold adds nothing to the history an SRE reads; a hold that holds back another change (a dwell
    towards disable after one towards set-k) does, and so does any hold after an action.
    """
    if last is None or record.action != Action.HOLD or last.action != Action.HOLD:
        return False
    return (last.reason.split(":")[0], last.k, last.wants) == (record.reason.split(":")[0], record.k, record.wants)


def stale_note(kept: Signals | None, now: str) -> str:
    """The age of the signals status still shows while no new ones can be read, so nobody takes them as live."""
    if kept is None or kept.observed_at is None:
        return ""
    age = datetime.fromisoformat(now) - datetime.fromisoformat(kept.observed_at)
    return f"; status.signals are stale: {max(0, round(age.total_seconds()))} s old (observed {kept.observed_at})"


def fold_evaluation(
    previous: SpecDecodeDeploymentStatus,
    signals: Signals | Unavailable,
    decision: Decision,
    method: str,
    now: str,
    generation: int | None,
) -> Evaluation:
    """The status after an evaluation, and what to carry out and announce."""
    status = previous.model_copy(update={"policy_state": decision.state.to_dict()})
    events: list[Note] = []
    if isinstance(signals, Unavailable):
        message = signals.message + stale_note(previous.signals, now)
        conditions = set_condition(
            status.conditions, METRICS_AVAILABLE, False, signals.reason, message, now, generation
        )
    else:
        status = status.model_copy(update={"signals": shown(signals)})
        detail = f"{signals.pods or 0} pods, {signals.samples or 0} verify rounds in the window"
        conditions = set_condition(status.conditions, METRICS_AVAILABLE, True, "SignalsRead", detail, now, generation)
    status = status.model_copy(update={"conditions": conditions})
    record = decision.to_record(now)
    last = previous.decisions[-1] if previous.decisions else None
    if not _repeats(last, record):
        status = status.model_copy(update={"decisions": [*previous.decisions, record][-DECISIONS_KEPT:]})
    apply = None
    if decision.action != Action.HOLD and decision.applied:
        apply = to_speculation_state(decision.target, method, record.reason, now)
        events.append(Note("Normal", EVENT_REASONS[decision.action], f"{decision.target.describe()}: {record.reason}"))
    recommendation, advised = recommend(previous.recommendation, decision, record.reason, now)
    status = status.model_copy(update={"recommendation": recommendation, "speedup_belief": believed(decision)})
    return Evaluation(status=status, apply=apply, events=events + advised)


def believed(decision: Decision) -> list[SpeedupEstimate] | None:
    """The fit's S(k,B) as status shows it, to three decimals; unset when the policy did not evaluate."""
    return [
        SpeedupEstimate(k=b.k, batch=b.batch, speedup=round(b.speedup, 3), std=round(b.std, 3)) for b in decision.belief
    ] or None


def shown(signals: Signals) -> Signals:
    """The signals as status keeps them: the printer columns' figures rounded, the rest as measured."""
    rounded = {name: round(value, SHOWN_DECIMALS) for name in SHOWN_SIGNALS if (value := getattr(signals, name))}
    return signals.model_copy(update=rounded)


def recommend(
    standing: Recommendation | None, decision: Decision, reason: str, now: str
) -> tuple[Recommendation | None, list[Note]]:
    """The recommendation status keeps after a decision, and its Event when the advice is new.

    The advice is the change and its target; the reason's figures move every evaluation, so they do not make
    it new. Kept in status, so a restarted operator does not announce it again either.
    """
    if decision.applied:
        return None, []  # not Recommend mode: what the policy wants, it does
    if decision.action == Action.HOLD:
        informed = decision.wants is None and decision.code not in UNINFORMED_HOLDS
        return (None if informed else standing), []
    advice = Recommendation(action=decision.action.value, target=decision.target.describe(), reason=reason, since=now)
    if standing is not None and (standing.action, standing.target) == (advice.action, advice.target):
        return standing, []
    message = f"would {advice.action} → {advice.target}: {reason}"
    return advice, [Note("Normal", "Recommendation", message)]
