"""A SpeculationProfile's points as the policy's prior, on plain data: step times measured on an engine the
roofline misjudges move the predicted S(k,B) towards the measured points before any live window is seen."""

from __future__ import annotations

from dataclasses import astuple, replace

from specfleet.operator.api.profile_types import ProfilePoint, Summary
from specfleet.operator.policy.acceptance import PRIORS, expected_tokens, prior_curve
from specfleet.operator.policy.calibration import PARAMETER_NAMES, Calibration, prior_of
from specfleet.operator.policy.costmodel import CostModel, Parameters
from specfleet.operator.policy.predictor import Predictor
from specfleet.operator.policy.profile_prior import fit_profile, measured_prior, point_shape
from tests.policy.helpers import COST_8B_H100

COST = COST_8B_H100
CURVE = prior_curve(PRIORS["eagle3"], 5)
KS, CONCURRENCIES = (0, 1, 3), (1, 2, 4, 8, 16, 32, 64)


def truth(cost: CostModel) -> Parameters:
    """An engine slower to stream its weights, dearer per verified token, with a dearer drafter."""
    prior = cost.prior()
    return replace(
        prior,
        fixed=prior.fixed * 1.3,
        token=prior.token * 1.8,
        draft_fixed=prior.draft_fixed * 2.0,
        draft_position=prior.draft_position * 3.0,
    )


def measured_points(cost: CostModel) -> list[ProfilePoint]:
    theta = astuple(truth(cost))
    points = []
    for k in KS:
        for concurrency in CONCURRENCIES:
            point = ProfilePoint(
                k=k,
                concurrency=concurrency,
                requests=4 * concurrency,
                output_tokens=400 * concurrency,
                duration_seconds=10.0,
                throughput_tokens_per_second=1.0,
                requests_per_second=1.0,
                tpot_seconds=Summary(),
                ttft_seconds=Summary(),
            )
            points.append(point.model_copy(update={"step_seconds": cost.step(point_shape(cost, point), theta)}))
    return points


def predicted_gain(cost: CostModel, k: int, batch: float) -> float:
    """Predicted S(k,B) over the table's k=0 row: what a live-table profile measures (its k=0 keeps the drafter)."""
    predictor = Predictor(cost, CURVE, Calibration())
    return predictor.speedup(k, batch) / predictor.speedup(0, batch, drafter_loaded=True)


def measured_gain(cost: CostModel, k: int, batch: float) -> float:
    theta = astuple(truth(cost))
    base = cost.step(cost.shape(0, batch, drafter=True), theta)
    return expected_tokens(CURVE, k) * base / cost.step(cost.shape(k, batch, drafter=True), theta)


def test_the_profile_fit_recovers_the_measured_step_times_within_a_few_percent() -> None:
    points = measured_points(COST)
    fit = fit_profile(COST, points)
    assert fit is not None
    assert fit.observations == len(points)
    assert [p.name for p in fit.parameters] == list(PARAMETER_NAMES)
    prior = measured_prior(fit)
    assert prior is not None
    profiled = COST.with_measured(prior)
    for point in points:
        assert point.step_seconds is not None
        predicted = profiled.step(point_shape(profiled, point))
        assert abs(predicted / point.step_seconds - 1) < 0.03, (point.k, point.concurrency)
    # The roofline misses the same points by far more: the test could fail.
    misses = [abs(COST.step(point_shape(COST, p)) / (p.step_seconds or 1) - 1) for p in points]
    assert max(misses) > 0.2


def test_predicted_speedup_moves_towards_the_measured_points() -> None:
    profiled = COST.with_measured(measured_prior(fit_profile(COST, measured_points(COST))))
    for k in (1, 3):
        for batch in (1.0, 8.0, 64.0):
            measured = measured_gain(COST, k, batch)
            before = abs(predicted_gain(COST, k, batch) - measured)
            after = abs(predicted_gain(profiled, k, batch) - measured)
            assert after < 0.03 * measured, (k, batch, after)
            assert after < before / 2, (k, batch, before, after)


def test_the_measured_prior_is_tighter_than_the_roofline_but_never_below_its_floor() -> None:
    profiled = COST.with_measured(measured_prior(fit_profile(COST, measured_points(COST))))
    roofline_mean, roofline_std = prior_of(COST)
    mean, std = prior_of(profiled)
    assert mean != roofline_mean
    fixed = PARAMETER_NAMES.index("fixed")
    assert std[fixed] < roofline_std[fixed] / 2
    assert all(s >= 0.1 * r - 1e-18 for s, r in zip(std, roofline_std, strict=True))


def test_no_usable_point_gives_no_fit_and_a_foreign_fit_no_prior() -> None:
    points = [p.model_copy(update={"step_seconds": None}) for p in measured_points(COST)]
    assert fit_profile(COST, points) is None
    fit = fit_profile(COST, measured_points(COST))
    assert fit is not None
    foreign = fit.model_copy(update={"parameters": fit.parameters[:-1]})
    assert measured_prior(foreign) is None
