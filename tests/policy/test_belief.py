"""What the fit believes, as status shows it: S(k,B) per k and load with its deviation (plain data)."""

from __future__ import annotations

import math

import pytest

from specfleet.operator.policy.acceptance import PRIORS, prior_curve
from specfleet.operator.policy.belief import BELIEF_BATCHES, speedup_belief
from specfleet.operator.policy.calibration import Calibration
from specfleet.operator.policy.context import initial_state
from specfleet.operator.policy.costmodel import CostModel
from specfleet.operator.policy.decide import decide
from specfleet.operator.policy.predictor import Predictor
from specfleet.operator.policy.profile_prior import fit_profile, measured_prior
from tests.policy.helpers import COST_8B_H100, make_context, make_signals
from tests.policy.test_profile_prior import measured_points

CURVE = prior_curve(PRIORS["eagle3"], 5)


def _belief(cost: CostModel) -> dict[tuple[int, int], tuple[float, float]]:
    beliefs = speedup_belief(Predictor(cost, CURVE, Calibration()), range(0, 4))
    return {(b.k, b.batch): (b.speedup, b.std) for b in beliefs}


def test_every_k_the_policy_may_choose_at_every_shown_load() -> None:
    belief = _belief(COST_8B_H100)
    assert set(belief) == {(k, b) for k in (1, 2, 3) for b in BELIEF_BATCHES}  # k=0 is the baseline, not shown
    predictor = Predictor(COST_8B_H100, CURVE, Calibration())
    for (k, batch), (speedup, std) in belief.items():
        assert speedup == pytest.approx(predictor.speedup(k, float(batch)))
        assert 0 < std < speedup
    # The roofline's S falls with load: past the knee verification stops being free.
    assert belief[(3, 1)][0] > belief[(3, 256)][0]


def test_measured_evidence_narrows_what_the_fit_believes() -> None:
    roofline = _belief(COST_8B_H100)
    profiled = _belief(
        COST_8B_H100.with_measured(measured_prior(fit_profile(COST_8B_H100, measured_points(COST_8B_H100))))
    )
    for key, (_, std) in profiled.items():
        assert std < roofline[key][1], key


def test_each_decision_carries_the_belief_it_was_taken_on() -> None:
    ctx = make_context(max_k=3)
    decision = decide(0.0, make_signals(8), initial_state(ctx), ctx)
    assert {(b.k, b.batch) for b in decision.belief} == {(k, b) for k in ctx.k_range if k > 0 for b in BELIEF_BATCHES}


def test_what_the_two_steps_share_cancels_in_the_spread_of_their_ratio() -> None:
    """The deviation of S is the ratio's under the joint posterior: a step against itself has none, and a
    spec step against a plain one spreads less than two independent step times would (the target's forward
    is in both), yet not nothing (the drafter and the extra verified tokens are the spec step's alone)."""
    fitted = Calibration().fitted(COST_8B_H100)
    off = COST_8B_H100.shape(0, 128.0, drafter=False)
    spec = COST_8B_H100.shape(3, 128.0, drafter=True)
    assert fitted.ratio_std(off, off) == pytest.approx(0.0, abs=1e-12)
    independent = math.hypot(fitted.step_std(off) / fitted.step(off), fitted.step_std(spec) / fitted.step(spec))
    assert 0.0 < fitted.ratio_std(off, spec) < independent
    predictor = Predictor(COST_8B_H100, CURVE, Calibration())
    assert predictor.speedup_std(3, 128.0) == pytest.approx(fitted.ratio_std(off, spec))
    assert predictor.speedup_std(0, 128.0) == 0.0
