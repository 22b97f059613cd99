"""What the fit believes: the speed-up S(k,B) of each k the policy may choose, at a few loads, with its
uncertainty. Pure.

S(k,B) = E(k)·C_off(B)/C_spec(k,B). Its spread is the fit's deviation of the ratio of the two step times, from
the joint posterior: they share the target's parameters, and what they share cancels. The acceptance curve's
own uncertainty is not in it: the curve is measured on every window, the step costs are what the fit learns
slowly.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    s = predictor.speedup(k, batch)
    return SpeedupBelief(k=k, batch=batch, speedup=s, std=s * predictor.speedup_std(k, batch))
