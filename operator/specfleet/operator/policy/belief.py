"""What the fit believes: the speed-up S(k,B) of each k the policy may choose, at a few loads, with its
uncertainty. Pure.

S(k,B) = E(k)·C_off(B)/C_spec(k,B). Its spread comes from the fit's predictive deviation of the two step times;
treating them as independent (they share the target's parameters, so they move together and the true spread
is smaller) keeps the figure on the cautious side. The acceptance curve's own uncertainty is not in it: the
curve is measured on every window, the step costs are what the fit learns slowly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from specfleet.operator.policy.costmodel import speedup
from specfleet.operator.policy.predictor import Predictor

# Loads shown: one request, a light and a busy batch, and two past the usual crossover.
BELIEF_BATCHES = (1, 8, 32, 128, 256)


@dataclass(frozen=True)
class SpeedupBelief:
    k: int
    batch: int
    speedup: float
    std: float


def speedup_belief(
    predictor: Predictor, k_range: range, batches: tuple[int, ...] = BELIEF_BATCHES
) -> tuple[SpeedupBelief, ...]:
    """S(k,B) and its standard deviation for every k ≥ 1 of `k_range` at every batch of `batches`."""
    return tuple(_belief(predictor, k, b) for k in k_range if k > 0 for b in batches)


def _belief(predictor: Predictor, k: int, batch: int) -> SpeedupBelief:
    cost, fitted = predictor.cost, predictor.fitted
    off, spec = cost.shape(0, float(batch), drafter=False), cost.shape(k, float(batch), drafter=True)
    off_s, spec_s = fitted.step(off), fitted.step(spec)
    s = speedup(off_s, spec_s, predictor.curve, k)
    relative = math.hypot(fitted.step_std(off) / off_s, fitted.step_std(spec) / spec_s)
    return SpeedupBelief(k=k, batch=batch, speedup=s, std=s * relative)
