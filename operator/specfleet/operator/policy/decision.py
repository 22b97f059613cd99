"""What one evaluation of the policy returns."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from specfleet.operator.api.types import Decision as DecisionRecord
from specfleet.operator.policy.belief import SpeedupBelief
from specfleet.operator.policy.state import PolicyState, SpecConfig

InputValue = float | int | str | None
Inputs = dict[str, InputValue]


class Action(StrEnum):
    HOLD = "hold"
    ENABLE = "enable"
    DISABLE = "disable"
    SET_K = "set-k"
    SET_SCHEDULE = "set-schedule"
    ROLLBACK = "rollback"


class Reason(StrEnum):
    """Low-cardinality reason codes (metric labels, Event reasons); `Decision.reason` has the detail."""

    PAUSED = "paused"
    PINNED = "pinned"
    METRICS_MISSING = "metrics-missing"
    COLLAPSE = "collapse"
    ROLLBACK_TPOT = "rollback-tpot"
    ROLLBACK_UNREADY = "rollback-unready"
    NO_ROLLBACK_TARGET = "no-rollback-target"
    VERIFIED = "verified"
    VERIFYING = "verifying"
    NO_FORECAST = "no-forecast"
    THIN_EVIDENCE = "thin-evidence"
    DWELL = "dwell"
    SWITCHING_COST = "switching-cost"
    CAPACITY = "capacity"
    RECURRING_PEAKS = "recurring-peaks"
    PEAK_RISK = "peak-risk"
    COOLDOWN = "cooldown"
    BUDGET = "budget"
    GAIN = "gain"
    LOSS = "loss"
    DRIFT = "drift"
    HYSTERESIS = "hysteresis"
    STEADY = "steady"


@dataclass(frozen=True)
class Decision:
    action: Action
    code: Reason
    reason: str
    # The configuration the fleet should run after this decision (for hold: the current one; in Recommend
    # mode: the one the policy would run).
    target: SpecConfig
    applied: bool
    inputs: Inputs
    state: PolicyState
    # On a hold a gate imposed: the change held back ("disable to off"); None otherwise.
    wants: str | None = None
    # Carried out on the running pods (a new batch-size→k table pushed live), not by a rollout.
    live: bool = False
    # What the fit believed when it decided: S(k,B) with its deviation (empty when it did not evaluate).
    belief: tuple[SpeedupBelief, ...] = ()

    @property
    def restart_bound(self) -> bool:
        """Whether carrying the decision out restarts the pods (every action but hold and a live change)."""
        return self.action != Action.HOLD and not self.live

    def to_record(self, time: str) -> DecisionRecord:
        """The entry for `status.decisions`."""
        return DecisionRecord(
            time=time,
            action=self.action.value,
            k=self.target.k if self.target.enabled else None,
            applied=self.applied,
            reason=f"{self.code.value}: {self.reason}",
            wants=self.wants,
            inputs=dict(self.inputs),
        )
