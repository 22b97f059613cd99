"""A change the policy would like to make, before the stability and safety gates have their say."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from specfleet.operator.policy.decision import Action, Reason
from specfleet.operator.policy.state import SpecConfig


class Kind(Enum):
    """Which gates a proposal passes through."""

    TUNE = "tune"  # the cost model's advice: evidence, dwell, switching cost, cooldown, budget with reserve
    SAFETY = "safety"  # collapse, fallback, rollback: only the restart budget
    PIN = "pin"  # the spec's mode pins the configuration: only the restart budget
    TROUGH = "trough"  # off before peaks the fleet cannot follow: the capacity gate and the restart budget


@dataclass(frozen=True)
class Proposal:
    action: Action
    code: Reason
    reason: str
    target: SpecConfig
    kind: Kind = Kind.TUNE
    gain: float = 0.0  # predicted relative throughput change of the switch
    wants: str | None = None  # on a hold a gate imposed: the change it held back ("disable to off")
    live: bool = False  # carried out without a restart (a new table pushed to the running pods)
    cost: float | None = None  # what the gates priced the switch at, in seconds of fleet-wide TPOT
    spread: float = 0.0  # the fit's relative standard deviation of 1 + gain

    def assured_gain(self, deviations: float) -> float:
        """The gain's lower bound `deviations` standard deviations below what the fit predicts (may be < 0)."""
        return (1.0 + self.gain) * (1.0 - deviations * self.spread) - 1.0


def hold(code: Reason, reason: str, current: SpecConfig) -> Proposal:
    return Proposal(Action.HOLD, code, reason, current)


def is_live(current: SpecConfig, target: SpecConfig, live_tables: bool) -> bool:
    """Whether going from `current` to `target` is only a new batch-size→k table (no restart).

    The pods start with the deployment's ceiling k, so any table within the policy's bounds fits the engine
    as started; enabling, disabling, a fixed k and a change of method are restart-bound.
    """
    return live_tables and current.schedule is not None and target.schedule is not None


def relative_gain(s_from: float, s_to: float) -> float:
    """Size of a throughput change, whichever its direction: 1.25 vs 1.0 and 0.8 vs 1.0 both give 0.25."""
    return max(s_from, s_to) / max(min(s_from, s_to), 1e-9) - 1.0
