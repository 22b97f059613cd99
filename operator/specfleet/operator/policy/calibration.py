"""The online fit of the step-time model: what the fleet's observed step times say about its parameters.

Each window gives one step time at the running batch, KV load and k in force: TPOT without speculation,
TPOT·L with it (L tokens per verify step). Its features (`CostModel.features`) are linear in the physical
parameters (`Parameters`), which both modes share: a plain step of B tokens and the verification of B·(k+1)
run the same target forward, so hours off teach the verify cost and hours on the drafter's. The roofline is
the prior (each parameter ±PRIOR_SPREAD of its value) and rules until evidence accumulates; the evidence is
bounded (sufficient statistics, halved every EVIDENCE_HALF_LIFE_S). The prompt tokens that chunked prefill
folds into the decode steps are counted in the forward's tokens (the pods' prompt tokens per generated token,
times the tokens the step generated), so their cost is not read as the decode's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any

from specfleet.operator.policy.costmodel import CostModel, Parameters, StepShape
from specfleet.operator.policy.fit import Evidence, Posterior

# Relative noise of one window's step time (TPOT means over a window, and what the linear form misses).
NOISE = 0.05
# Prior standard deviation as a fraction of each roofline parameter: the roofline is right within a factor.
PRIOR_SPREAD = 0.5
EVIDENCE_HALF_LIFE_S = 4 * 3600.0
# A profile's measured deviation never falls below this fraction of the roofline's (see `prior_of`).
MEASURED_SPREAD_FLOOR = 0.1
# Step times this far from the prior are measurement faults (idle engines, mixed configs, an engine that is
# not the hardware the spec names), not cost-model errors: they are not fitted.
RATIO_BOUNDS = (0.2, 5.0)
PARAMETER_NAMES = tuple(f.name for f in fields(Parameters))


@dataclass(frozen=True)
class Calibration:
    """The fleet's evidence on the step model, the time of its last observation, and the prompt load."""

    evidence: Evidence = field(default_factory=Evidence)
    observed_at: float | None = None
    # Prompt tokens admitted per generated token in the last window that reported it: every step carries that
    # many prompt tokens per token it generates (chunked prefill), whatever the batch.
    prompt_ratio: float = 0.0

    def observe(self, cost: CostModel, shape: StepShape, step_s: float, now: float, weight: float) -> Calibration:
        """Fold one observed step time of a step of `shape` in; faults (see RATIO_BOUNDS) change nothing."""
        if step_s <= 0 or not RATIO_BOUNDS[0] <= step_s / cost.step(shape) <= RATIO_BOUNDS[1]:
            return self
        elapsed = 0.0 if self.observed_at is None else max(now - self.observed_at, 0.0)
        decay = 0.5 ** (elapsed / EVIDENCE_HALF_LIFE_S)
        evidence = self.evidence.add(cost.features(shape), step_s, weight, decay)
        return replace(self, evidence=evidence, observed_at=now)

    def with_prompt_ratio(self, ratio: float | None) -> Calibration:
        return self if ratio is None else replace(self, prompt_ratio=max(ratio, 0.0))

    def fitted(self, cost: CostModel) -> FittedCost:
        return FittedCost(cost, self)

    def to_dict(self) -> dict[str, Any]:
        return {**self.evidence.to_dict(), "observedAt": self.observed_at, "promptRatio": self.prompt_ratio}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Calibration:
        """The persisted fit; a shape from another model version (an older status) starts over from the prior."""
        try:
            evidence = Evidence.from_dict(raw)
        except (TypeError, ValueError):
            return cls()
        if evidence.moment and len(evidence.moment) != len(PARAMETER_NAMES):
            return cls()
        at = raw.get("observedAt")
        return cls(evidence, None if at is None else float(at), float(raw.get("promptRatio", 0.0)))


@dataclass(frozen=True)
class FittedCost:
    """The posterior of one deployment's step model: step costs with their uncertainty."""

    cost: CostModel
    calibration: Calibration

    @cached_property
    def posterior(self) -> Posterior:
        prior, spread = prior_of(self.cost)
        if not self.calibration.evidence.moment:
            return Posterior(prior, _diagonal(spread))
        return self.calibration.evidence.posterior(prior, spread, NOISE)

    @cached_property
    def values(self) -> tuple[float, ...]:
        """The posterior mean, each parameter at least zero (no physical cost is negative)."""
        return tuple(max(v, 0.0) for v in self.posterior.mean)

    @property
    def parameters(self) -> Parameters:
        return Parameters(*self.values)

    def step(self, shape: StepShape) -> float:
        return self.cost.step(shape, self.values)

    def step_std(self, shape: StepShape) -> float:
        return self.posterior.predictive_std(self.cost.features(shape))

    def ratio_std(self, top: StepShape, bottom: StepShape) -> float:
        """Relative standard deviation of step(top)/step(bottom), to first order. Both come from the same
        parameters: what the two steps share (the target's forward) moves them together and cancels."""
        top_s, bottom_s = self.step(top), self.step(bottom)
        gradient = tuple(
            t / top_s - b / bottom_s for t, b in zip(self.cost.features(top), self.cost.features(bottom), strict=True)
        )
        return self.posterior.predictive_std(gradient)


def roofline_spread(cost: CostModel) -> tuple[float, ...]:
    """PRIOR_SPREAD of each roofline parameter, but the drafter's per-sequence cost: the roofline prices it at
    the draft's share of the target's work, while vLLM's speculative path costs far more per sequence on a k=0
    row (`ZERO_ROW_TAX`). Whether drafting steps pay that too is not measured, so its spread is that cost."""
    values = cost.roofline_values
    spread = tuple(PRIOR_SPREAD * p for p in values)
    return _with(spread, "draft_sequence", values[PARAMETER_NAMES.index("zero_row_sequence")])


def prior_of(cost: CostModel) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The prior's mean and standard deviation: the roofline's, or a profile's measured ones.

    A measured deviation is floored at MEASURED_SPREAD_FLOOR of the roofline's, so that live evidence can still
    move a parameter the profile pinned down under conditions (prompts, context, hardware) that may drift.
    """
    roofline = roofline_spread(cost)
    if cost.measured is None:
        return cost.roofline_values, roofline
    floored = tuple(max(s, MEASURED_SPREAD_FLOOR * r) for s, r in zip(cost.measured.std, roofline, strict=True))
    return cost.measured.mean, floored


def _with(values: tuple[float, ...], name: str, value: float) -> tuple[float, ...]:
    i = PARAMETER_NAMES.index(name)
    return (*values[:i], value, *values[i + 1 :])


def _diagonal(std: tuple[float, ...]) -> tuple[float, ...]:
    n = len(std)
    return tuple(std[i] ** 2 if i == j else 0.0 for i in range(n) for j in range(n))


def observation_weight(interval_s: float, window_s: float) -> float:
    """Consecutive windows overlap by window - interval: each observation counts for its new share only."""
    return 1.0 if window_s <= 0 else min(max(interval_s / window_s, 0.0), 1.0)
