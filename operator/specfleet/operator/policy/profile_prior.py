"""A SpeculationProfile's measured points as the step-cost model's prior. Pure.

Each point is one step time (mean TPOT x L) at a known k and concurrency, on the fleet's own model, draft and
hardware: the same observation the online fit takes from a window of live signals (`calibration.py`), so the
profile is fitted by the same Bayesian regression from the roofline. Its posterior (mean and deviation per
parameter) is stored in the profile's status, and a fleet with a completed profile starts its own fit there
instead of at the roofline (`CostModel.measured`).

The profiling engine sets k through its live table, so its drafter is loaded at every point (k=0 included):
a k=0 point is a k=0 row's step, the plain step plus that row's tax. The running batch is taken as the
concurrency (each point keeps that many requests in flight) and the context as the cost model's default.
Since the drafter is loaded at every point, the plain step is never measured alone: the target's fixed cost is
measured only in sums with the k=0 row's and the drafter's; the prior splits them.
"""

from __future__ import annotations

from collections.abc import Sequence

from specfleet.operator.api.profile_types import FittedParameter, ProfilePoint, StepCostFit
from specfleet.operator.policy.calibration import PARAMETER_NAMES, Calibration
from specfleet.operator.policy.costmodel import CostModel, MeasuredPrior, StepShape


def point_shape(cost: CostModel, point: ProfilePoint) -> StepShape:
    batch = float(point.concurrency)
    return StepShape(batch=batch, tokens=batch * (point.k + 1), context=cost.context_tokens, k=point.k, drafter=True)


def point_weight(point: ProfilePoint) -> float:
    """A point counts as one live window per round of requests it ran (requests ÷ concurrency, at least one):
    each round is a full batch's worth of steps, timed alone."""
    return max(point.requests / point.concurrency, 1.0)


def fit_profile(cost: CostModel, points: Sequence[ProfilePoint]) -> StepCostFit | None:
    """The roofline prior updated with every point's step time; None when no point is usable."""
    roofline = cost.with_measured(None)
    calibration, used = Calibration(), 0
    for point in points:
        if point.step_seconds is None:
            continue
        shape, weight = point_shape(roofline, point), point_weight(point)
        observed = calibration.observe(roofline, shape, point.step_seconds, 0.0, weight)
        used += observed is not calibration
        calibration = observed
    if not used:
        return None
    posterior = calibration.fitted(roofline).posterior
    parameters = [
        FittedParameter(name=name, mean=mean, std=std)
        for name, mean, std in zip(PARAMETER_NAMES, posterior.mean, posterior.std(), strict=True)
    ]
    return StepCostFit(parameters=parameters, observations=used, context_tokens=roofline.context_tokens)


def measured_prior(fit: StepCostFit | None) -> MeasuredPrior | None:
    """The fit as the policy's prior; None for a fit of another model version (other parameters)."""
    if fit is None or tuple(p.name for p in fit.parameters) != PARAMETER_NAMES:
        return None
    return MeasuredPrior(tuple(p.mean for p in fit.parameters), tuple(p.std for p in fit.parameters))
